//! Processes a Bash call of unattended work left running behind it.
//!
//! Why: a write that lands after a Bash call's check (a detached
//! `setsid sh -c 'sleep 2; …'`) is outside every before/after bracket.
//! Such a write can only come from a process that outlived the call that
//! started it, so the check after each call notes those processes
//! ([`note_after_call`]), and only while one of them was alive at the
//! guard's last look are changes between hooks put back
//! ([`super::pending`]). A change between hooks with no such process (the
//! user's own edit from a terminal, a journaled `ralph-hooks` command)
//! stands, as it always did.
//!
//! Which processes: those started since the call's snapshot (their start
//! time in `/proc/<pid>/stat`, which neither `setsid`, `nohup`, `env -i`
//! nor a renamed `argv[0]` changes), still alive when the call's check
//! runs, and orphaned: a process the call's shell started outlives that
//! shell, so by then it (or the oldest survivor of its tree) is a direct
//! child of init or of the nearest subreaper above Claude Code — an
//! ancestor of this hook above Claude Code. Only those ancestors' children
//! are read, not the whole process table. Processes under anything else
//! (Claude Code's other hooks and helpers, another program's builds) are
//! not the call's. A `run_in_background` call is the exception: its shell
//! is Claude Code's direct child and is what it leaves behind. So is a
//! call whose shell `exec`ed into a hook (a made-up post-tool payload for
//! its own call): what it started before is then the hook's own child. The hooks'
//! own daemon is not counted. Another orphan of the same user born in that
//! window can be counted too; then changes between hooks are put back a
//! little longer than needed, never less.
//!
//! Linux only (`/proc`); elsewhere nothing is noted and changes between
//! hooks stand (docs/guard.md says so).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The record, in the watch folder.
pub const FILE: &str = "background.json";

/// One process, named by its pid and its start time (a reused pid is
/// another process).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proc {
    pub pid: u32,
    pub start_ticks: u64,
    /// `comm`, for the record only.
    #[serde(default)]
    pub name: String,
    /// Its parent when noted: where it was orphaned to (init, or a
    /// subreaper), so where a fresh process it hands its work to goes.
    #[serde(default)]
    pub reaper: u32,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Background {
    #[serde(default)]
    pub procs: Vec<Proc>,
}

/// Now, in the clock ticks since boot that `/proc/<pid>/stat` counts start
/// times in. `None` where there is no `/proc`.
pub fn now_ticks() -> Option<u64> {
    let uptime = std::fs::read_to_string("/proc/uptime").ok()?;
    let seconds: f64 = uptime.split_whitespace().next()?.parse().ok()?;
    Some((seconds * ticks_per_second() as f64) as u64)
}

fn ticks_per_second() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as u64 } else { 100 }
}

/// What `/proc/<pid>/stat` says about one process.
#[derive(Debug, Clone)]
struct Stat {
    ppid: u32,
    start_ticks: u64,
    zombie: bool,
    name: String,
}

fn read_stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// `pid (comm) state ppid … starttime(22nd) …`; `comm` may hold spaces
/// and parentheses, so the fields are counted from its last `)`.
fn parse_stat(text: &str) -> Option<Stat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    Some(Stat {
        zombie: matches!(rest.first(), Some(&"Z") | Some(&"X")),
        ppid: rest.get(1)?.parse().ok()?,
        start_ticks: rest.get(19)?.parse().ok()?,
        name,
    })
}

/// Whether this process is the user's own (a terminal's, a script's), not
/// one a Bash call of the Claude Code process `claude` (pid, start time)
/// started: that Claude Code process is not among its ancestors, and no
/// process on its chain that started at or after `since_ticks` (when the
/// call began) hangs under init or under an ancestor of Claude Code above
/// its parent — where a call's orphans go: init, a subreaper such as
/// `systemd --user`, a tmux or screen server Claude Code runs under
/// (`setsid -f`, `nohup … &`, `tmux run-shell`). A terminal's shell hangs
/// under the terminal, started earlier; a script that runs `claude -p` and
/// then the CLI is Claude Code's parent. When `/proc` cannot say: `false`,
/// so nothing the call may have done is taken for the user's.
pub fn outside_the_call(claude: (u32, Option<u64>), since_ticks: Option<u64>) -> bool {
    let mut adopters: Vec<u32> = vec![1];
    // Claude Code's own parent is where the user's script or shell runs the
    // CLI from; the ancestors above it are where orphans are handed.
    let parent = read_stat(claude.0).map(|stat| stat.ppid);
    let mut up = parent.and_then(read_stat).map(|stat| stat.ppid);
    // A chain deeper than this is not a real one: stop reading.
    for _ in 0..64 {
        let Some(pid) = up.filter(|pid| *pid > 1) else {
            break;
        };
        adopters.push(pid);
        up = read_stat(pid).map(|stat| stat.ppid);
    }
    let mut pid = std::process::id();
    for _ in 0..64 {
        let Some(stat) = read_stat(pid) else {
            return false;
        };
        if pid == claude.0 && claude.1.is_none_or(|ticks| ticks == stat.start_ticks) {
            return false;
        }
        let started_since = since_ticks.is_some_and(|since| stat.start_ticks >= since);
        if started_since && adopters.contains(&stat.ppid) {
            return false;
        }
        if stat.ppid <= 1 {
            return true;
        }
        pid = stat.ppid;
    }
    false
}

/// Whether `proc` is still the process it was.
pub fn alive(proc: &Proc) -> bool {
    read_stat(proc.pid).is_some_and(|stat| stat.start_ticks == proc.start_ticks && !stat.zombie)
}

/// The processes started at or after `since_ticks` that the call left
/// behind (see the module doc). `own_children_count`: the call ran in the
/// background (`run_in_background`), so a direct child of Claude Code
/// counts too. Only the children of this hook's ancestors are read (from
/// `/proc/<pid>/task/*/children`), not the whole process table: an orphan
/// is a direct child of init or of a subreaper among them.
pub fn left_behind(since_ticks: u64, own_children_count: bool) -> Vec<Proc> {
    let ancestors = ancestors_of_self();
    let spawners = spawners(&ancestors);
    let mut parents: Vec<u32> = ancestors
        .iter()
        .copied()
        .filter(|pid| !spawners.contains(pid))
        .collect();
    if own_children_count {
        parents.extend(spawners.last().copied());
    }
    // Below Claude Code (or the harness), the hook and the shell that runs
    // it have no children of their own at the check — unless the call's
    // own shell `exec`ed into the hook: then what the command started
    // before is theirs, still the call's, and outlives the hook's check.
    if let Some((_, below)) = spawners.split_last() {
        parents.extend(below.iter().copied());
    }
    let uid = unsafe { libc::geteuid() };
    let ours = our_bin_dir();
    let mut found = Vec::new();
    for parent in parents {
        // An orphan is handed to the reaper's first live thread, its
        // leader; Claude Code may fork from any of its threads.
        let all_threads = own_children_count && spawners.last() == Some(&parent);
        for pid in children_of(parent, all_threads) {
            if ancestors.contains(&pid) || found.iter().any(|p: &Proc| p.pid == pid) {
                continue;
            }
            if let Some(proc) = started_since(pid, since_ticks, uid, ours.as_deref(), parent) {
                found.push(proc);
            }
        }
    }
    found.sort_by_key(|p| p.pid);
    found
}

/// Process `pid` as one a call may have left behind: started at or after
/// `since_ticks`, alive, the agent's user's (`uid`), not one of ours.
fn started_since(
    pid: u32,
    since_ticks: u64,
    uid: u32,
    ours: Option<&Path>,
    reaper: u32,
) -> Option<Proc> {
    let stat = read_stat(pid)?;
    if stat.start_ticks < since_ticks
        || stat.zombie
        || owner(pid) != Some(uid)
        || is_ours(pid, ours)
    {
        return None;
    }
    Some(Proc {
        pid,
        start_ticks: stat.start_ticks,
        name: crate::util::text::escape_controls(&stat.name).into_owned(),
        reaper,
    })
}

/// The direct children of `pid`: of its leader thread, or of all its
/// threads.
fn children_of(pid: u32, all_threads: bool) -> Vec<u32> {
    let parse = |text: String| -> Vec<u32> {
        text.split_whitespace()
            .filter_map(|w| w.parse::<u32>().ok())
            .collect()
    };
    if !all_threads {
        return std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
            .map(parse)
            .unwrap_or_default();
    }
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut children = Vec::new();
    for task in tasks.filter_map(|e| e.ok()) {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            children.extend(parse(text));
        }
    }
    children
}

/// This process and its ancestors, nearest first, up to init.
fn ancestors_of_self() -> Vec<u32> {
    let mut chain = vec![std::process::id()];
    let mut pid = std::process::id();
    for _ in 0..128 {
        let Some(stat) = read_stat(pid) else { break };
        if stat.ppid == 0 || chain.contains(&stat.ppid) {
            break;
        }
        chain.push(stat.ppid);
        pid = stat.ppid;
    }
    chain
}

/// The processes whose direct children are not the call's: this hook and
/// its chain up to Claude Code (`CLAUDE_PID`), or only its parent when it
/// was not started by Claude Code (a test harness). Init and a subreaper
/// further up are where the call's orphans go, so they are not in it.
fn spawners(ancestors: &[u32]) -> Vec<u32> {
    let claude = std::env::var("CLAUDE_PID")
        .ok()
        .and_then(|pid| pid.trim().parse::<u32>().ok());
    match claude.and_then(|pid| ancestors.iter().position(|&a| a == pid)) {
        Some(at) => ancestors[..=at].to_vec(),
        None => ancestors.iter().take(2).copied().collect(),
    }
}

fn owner(pid: u32) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/{pid}"))
        .ok()
        .map(|m| m.uid())
}

fn our_bin_dir() -> Option<PathBuf> {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
}

/// A process running one of ralph-hooks' own binaries (the daemon).
fn is_ours(pid: u32, dir: Option<&Path>) -> bool {
    let Some(dir) = dir else { return false };
    std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| {
        exe.parent() == Some(dir)
            && exe
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("ralph-"))
    })
}

/// After a call's check (the caller holds the watch folder's lock): the
/// processes it left behind join those of earlier calls still alive.
/// Returns whether any is noted now.
pub fn note_after_call(watch: &Path, since_ticks: Option<u64>, in_background: bool) -> bool {
    let mut record = read(watch);
    forget_ended(&mut record, None);
    if let Some(since) = since_ticks {
        for proc in left_behind(since, in_background) {
            if !record
                .procs
                .iter()
                .any(|p| p.pid == proc.pid && p.start_ticks == proc.start_ticks)
            {
                record.procs.push(proc);
            }
        }
    }
    let any = !record.procs.is_empty();
    save(watch, &record);
    any
}

/// The watcher's look (the caller holds the watch folder's lock): see
/// [`forget_ended`]; the watcher was orphaned the way the noted processes
/// were, so its own parent is one more place their heirs go. Returns
/// whether any noted process is alive.
pub fn adopt_handoffs(watch: &Path) -> bool {
    let mut record = read(watch);
    forget_ended(&mut record, Some(std::os::unix::process::parent_id()));
    // None left: the record stays as it was for the watcher's last look
    // (what the last of them wrote as it ended may have landed after the
    // previous look began); [`settle`] forgets them after it.
    if record.procs.is_empty() {
        return false;
    }
    save(watch, &record);
    true
}

/// After the watcher's last look: forgets the ended processes (adopting
/// their heirs) and says whether any is still alive.
pub fn settle(watch: &Path) -> bool {
    let mut record = read(watch);
    forget_ended(&mut record, Some(std::os::unix::process::parent_id()));
    save(watch, &record);
    !record.procs.is_empty()
}

/// The noted processes that have ended by now (the caller holds the watch
/// folder's lock).
pub fn ended(watch: &Path) -> Vec<Proc> {
    read(watch)
        .procs
        .into_iter()
        .filter(|proc| !alive(proc))
        .collect()
}

/// A between-hooks look (the caller holds the watch folder's lock): the
/// processes in `ended_before` (ended before the look began, so they
/// wrote what they wrote before it) are forgotten, their heirs adopted;
/// one that ended during the look stays noted for the next.
pub fn forget(watch: &Path, ended_before: &[Proc]) {
    let mut record = read(watch);
    if record.procs.is_empty() {
        return;
    }
    let ended_since: Vec<Proc> = record
        .procs
        .iter()
        .filter(|proc| {
            !ended_before
                .iter()
                .any(|gone| gone.pid == proc.pid && gone.start_ticks == proc.start_ticks)
        })
        .cloned()
        .collect();
    forget_ended(&mut record, None);
    for proc in ended_since {
        if !record
            .procs
            .iter()
            .any(|p| p.pid == proc.pid && p.start_ticks == proc.start_ticks)
        {
            record.procs.push(proc);
        }
    }
    save(watch, &record);
}

/// Forgets the noted processes that have ended — after adopting what they
/// handed their work to: a process started since the oldest noted one,
/// orphaned where those went (init, the reaper each was noted under, the
/// reaper of those still alive, `also_reaper`), is theirs too. One noted
/// process can hand its work to a fresh one by a double fork and end, so
/// that none noted is alive when the write lands (guard attack W-3); every
/// look that forgets ended processes adopts first, or a look other than
/// the watcher's (a hook's) forgot the one that had just handed off, and
/// with it the time its heir is adopted from (re-attack X-1).
fn forget_ended(record: &mut Background, also_reaper: Option<u32>) {
    // Since the oldest noted, ended ones included: the one that handed off
    // may be gone by now.
    let Some(since) = record.procs.iter().map(|p| p.start_ticks).min() else {
        return;
    };
    let mut reapers: Vec<u32> = vec![1];
    reapers.extend(record.procs.iter().map(|p| p.reaper));
    reapers.extend(also_reaper);
    record.procs.retain(alive);
    reapers.extend(
        record
            .procs
            .iter()
            .filter_map(|proc| read_stat(proc.pid).map(|stat| stat.ppid)),
    );
    reapers.retain(|&pid| pid != 0);
    reapers.sort_unstable();
    reapers.dedup();
    let uid = unsafe { libc::geteuid() };
    let ours = our_bin_dir();
    let me = std::process::id();
    let mut adopted = Vec::new();
    for reaper in reapers {
        for pid in children_of(reaper, false) {
            if pid == me || record.procs.iter().any(|p| p.pid == pid) {
                continue;
            }
            adopted.extend(started_since(pid, since, uid, ours.as_deref(), reaper));
        }
    }
    record.procs.extend(adopted);
}

pub fn read(watch: &Path) -> Background {
    super::read_json(&watch.join(FILE)).unwrap_or_default()
}

/// Saves, or removes the record when no process is left.
pub fn save(watch: &Path, record: &Background) {
    let path = watch.join(FILE);
    if record.procs.is_empty() {
        let _ = std::fs::remove_file(&path);
    } else if let Err(error) = super::write_json(&path, record) {
        eprintln!(
            "ralph-hooks guard: cannot note the processes a command left running ({}): {error:#}",
            path.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_past_a_name_with_spaces_and_parentheses() {
        let line = "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
        let stat = parse_stat(line).unwrap();
        assert_eq!(stat.ppid, 1);
        assert_eq!(stat.start_ticks, 987654);
        assert_eq!(stat.name, "my (odd) name");
        assert!(!stat.zombie);
        assert!(parse_stat("garbage").is_none());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_alive_and_a_reused_pid_is_not() {
        let me = read_stat(std::process::id()).unwrap();
        let proc = Proc {
            pid: std::process::id(),
            start_ticks: me.start_ticks,
            name: me.name.clone(),
            reaper: me.ppid,
        };
        assert!(alive(&proc));
        assert!(!alive(&Proc {
            start_ticks: me.start_ticks + 1,
            ..proc
        }));
    }
}
