//! Signed receipts: a DSSE envelope around the statement, signed with an
//! SSH key the user already has through `ssh-keygen -Y sign` (over DSSE's
//! pre-authentication encoding, namespace [`NAMESPACE`]), and checked with
//! `ssh-keygen -Y verify` against an allowed-signers file, or with
//! `-Y check-novalidate` (the signature holds, whoever made it) without one.
//!
//! The envelope's `sig` is the SSH signature's binary form (base64, as DSSE
//! wants); its `keyid` the key's fingerprint.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

use super::statement::PAYLOAD_TYPE;
use super::tree::TempDir;

/// The `ssh-keygen -Y` namespace of receipt signatures.
pub const NAMESPACE: &str = "ralph-hooks-receipt";

/// DSSE's pre-authentication encoding of a payload.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding.
pub fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> shift) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Standard base64 (padding optional, whitespace ignored); `None` when it
/// is not base64.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut buffer = 0u32;
    let mut bits = 0;
    for c in text.bytes() {
        if c.is_ascii_whitespace() {
            continue;
        }
        if c == b'=' {
            break;
        }
        let value = ALPHABET.iter().position(|&a| a == c)? as u32;
        buffer = (buffer << 6) | value;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// Whether a receipt file's JSON is a DSSE envelope (else a bare statement).
pub fn is_envelope(value: &Value) -> bool {
    value.get("payloadType").is_some() && value.get("payload").is_some()
}

/// Signs `statement` (its bytes as written) with the SSH key at `key`.
pub fn sign(statement: &[u8], key: &Path) -> anyhow::Result<Value> {
    let temp = TempDir::new("receipt-sign")?;
    let message = temp.path().join("message");
    std::fs::write(&message, pae(PAYLOAD_TYPE, statement))
        .with_context(|| format!("cannot write {}", message.display()))?;
    let output = Command::new("ssh-keygen")
        .args(["-Y", "sign", "-q", "-n", NAMESPACE, "-f"])
        .arg(key)
        .arg(&message)
        .stdin(Stdio::null())
        .output()
        .context("cannot run ssh-keygen (is OpenSSH installed?)")?;
    if !output.status.success() {
        bail!(
            "ssh-keygen -Y sign with {} failed: {}",
            key.display(),
            crate::util::text::escape_controls(String::from_utf8_lossy(&output.stderr).trim())
        );
    }
    let armored = std::fs::read_to_string(temp.path().join("message.sig"))
        .context("ssh-keygen wrote no signature")?;
    let sig: String = armored
        .lines()
        .filter(|line| !line.starts_with("-----"))
        .collect();
    Ok(json!({
        "payloadType": PAYLOAD_TYPE,
        "payload": base64_encode(statement),
        "signatures": [{"keyid": fingerprint(key).unwrap_or_default(), "sig": sig}],
    }))
}

/// `SHA256:…` of a key (private or public), if ssh-keygen can tell it.
fn fingerprint(key: &Path) -> Option<String> {
    let output = Command::new("ssh-keygen")
        .arg("-l")
        .arg("-f")
        .arg(key)
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.split_whitespace()
        .find(|word| word.starts_with("SHA256:"))
        .map(str::to_string)
}

/// What a signature check found.
#[derive(Debug, Clone, PartialEq)]
pub struct Signed {
    /// The statement's bytes (the payload).
    pub statement: Vec<u8>,
    /// For people: who signed, and how far it was checked.
    pub described: String,
}

/// Checks an envelope's first signature; the statement when it holds, else
/// why not.
pub fn open(envelope: &Value, allowed_signers: Option<&Path>) -> Result<Signed, String> {
    if envelope["payloadType"] != PAYLOAD_TYPE {
        return Err(format!(
            "the envelope's payloadType is {}, not {PAYLOAD_TYPE}",
            envelope["payloadType"]
        ));
    }
    let statement = envelope["payload"]
        .as_str()
        .and_then(base64_decode)
        .ok_or("the envelope's payload is not base64")?;
    let signature = &envelope["signatures"][0];
    let sig = signature["sig"]
        .as_str()
        .ok_or("the envelope has no signature")?;
    // DSSE's keyid is an unsigned hint: the key named to people is the one
    // inside the SSH signature, as ssh-keygen reports it, and a keyid that
    // names another key is refused.
    let keyid = signature["keyid"].as_str().unwrap_or("");
    let temp = TempDir::new("receipt-verify").map_err(|e| format!("{e:#}"))?;
    let sig_path = temp.path().join("receipt.sig");
    let mut armored = String::from("-----BEGIN SSH SIGNATURE-----\n");
    let compact: String = sig.chars().filter(|c| !c.is_whitespace()).collect();
    for line in compact.as_bytes().chunks(70) {
        armored.push_str(&String::from_utf8_lossy(line));
        armored.push('\n');
    }
    armored.push_str("-----END SSH SIGNATURE-----\n");
    std::fs::write(&sig_path, armored).map_err(|e| format!("cannot write the signature: {e}"))?;
    let message = pae(PAYLOAD_TYPE, &statement);
    let described = match allowed_signers {
        Some(allowed) => {
            let principals = ssh_keygen(
                &["-Y", "find-principals", "-s"],
                &[&sig_path, Path::new("-f"), allowed],
                None,
            )?;
            let principal = principals
                .lines()
                .next()
                .filter(|line| !line.is_empty())
                .ok_or_else(|| format!("no key in {} made this signature", allowed.display()))?
                .to_string();
            let said = ssh_keygen(
                &["-Y", "verify", "-n", NAMESPACE, "-I", &principal, "-f"],
                &[allowed, Path::new("-s"), &sig_path],
                Some(&message),
            )?;
            let key = signing_key(&said, keyid)?;
            format!(
                "signed by {} (key {key}), checked against {}",
                crate::util::text::escape_controls(&principal),
                allowed.display()
            )
        }
        None => {
            let said = ssh_keygen(
                &["-Y", "check-novalidate", "-n", NAMESPACE, "-s"],
                &[&sig_path],
                Some(&message),
            )?;
            let key = signing_key(&said, keyid)?;
            format!(
                "the signature holds for key {key}, which nothing here vouches for: who made it is not checked without --allowed-signers"
            )
        }
    };
    Ok(Signed {
        statement,
        described,
    })
}

/// The fingerprint of the key that made the signature, from what
/// ssh-keygen said about it (`… with ED25519 key SHA256:…`); an error when
/// the envelope's `keyid` names another key.
fn signing_key(said: &str, keyid: &str) -> Result<String, String> {
    let key = said
        .split_whitespace()
        .find(|word| word.starts_with("SHA256:"))
        .map(str::to_string)
        .ok_or("ssh-keygen did not name the key that made the signature")?;
    if !keyid.is_empty() && keyid != key {
        return Err(format!(
            "the envelope's keyid {} is not the key that made the signature ({key})",
            crate::util::text::escape_controls(keyid)
        ));
    }
    Ok(key)
}

/// `ssh-keygen ARGS PATHS` with `stdin`; what it said (stdout, then
/// stderr), or why it failed.
fn ssh_keygen(args: &[&str], paths: &[&Path], stdin: Option<&[u8]>) -> Result<String, String> {
    use std::io::Write as _;
    let mut command = Command::new("ssh-keygen");
    command.args(args).args(paths);
    command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot run ssh-keygen (is OpenSSH installed?): {e}"))?;
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        let _ = pipe.write_all(bytes);
    }
    let output = child
        .wait_with_output()
        .map_err(|e| format!("ssh-keygen: {e}"))?;
    if !output.status.success() {
        let said = String::from_utf8_lossy(&output.stderr);
        return Err(format!(
            "the signature does not verify (ssh-keygen {}: {})",
            args[..2].join(" "),
            crate::util::text::escape_controls(said.trim())
        ));
    }
    Ok(format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips() {
        for text in ["", "f", "fo", "foo", "foob", "fooba", "foobar"] {
            let encoded = base64_encode(text.as_bytes());
            assert_eq!(base64_decode(&encoded).unwrap(), text.as_bytes());
        }
        assert_eq!(base64_encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64_encode(b"fo"), "Zm8=");
        assert!(base64_decode("not*base64").is_none());
    }

    #[test]
    fn pae_is_dsse_v1() {
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
        );
    }
}
