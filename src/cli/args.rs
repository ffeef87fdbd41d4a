//! A small argument reader: flags may come anywhere, `--flag=value` and
//! `--flag value` both work, `--` ends flags. Anything left unread at the end
//! is an error, so typos do not pass silently.

use anyhow::{Context as _, bail};

pub struct Args {
    items: Vec<String>,
}

impl Args {
    pub fn new(items: Vec<String>) -> Args {
        Args { items }
    }

    fn flag_end(&self) -> usize {
        self.items
            .iter()
            .position(|item| item == "--")
            .unwrap_or(self.items.len())
    }

    /// Removes a boolean flag; true when it was present.
    pub fn flag(&mut self, name: &str) -> bool {
        let end = self.flag_end();
        match self.items[..end].iter().position(|item| item == name) {
            Some(index) => {
                self.items.remove(index);
                true
            }
            None => false,
        }
    }

    /// Removes a flag that may carry a value only as `--name=VALUE` (so a
    /// bare `--name` never swallows the next argument): `None` when absent,
    /// `Some(None)` for a bare flag, `Some(Some(value))` otherwise; an error
    /// when it repeats.
    pub fn flag_with_value(&mut self, name: &str) -> anyhow::Result<Option<Option<String>>> {
        let prefix = format!("{name}=");
        let end = self.flag_end();
        let mut found = Vec::new();
        let mut index = 0;
        while index < end - found.len() {
            let item = &self.items[index];
            if item == name {
                found.push(None);
                self.items.remove(index);
            } else if let Some(value) = item.strip_prefix(&prefix) {
                found.push(Some(value.to_string()));
                self.items.remove(index);
            } else {
                index += 1;
            }
        }
        if found.len() > 1 {
            bail!("{name} given {} times; give it once", found.len());
        }
        Ok(found.pop())
    }

    /// Whether a flag is present, without consuming it.
    pub fn peek_flag(&self, name: &str) -> bool {
        self.items[..self.flag_end()]
            .iter()
            .any(|item| item == name)
    }

    /// The first positional argument, left in place (flag values are not
    /// told apart from positionals here: good enough to spot a command).
    pub fn peek_first(&self) -> Option<&str> {
        self.items[..self.flag_end()]
            .iter()
            .find(|item| !item.starts_with('-'))
            .map(String::as_str)
    }

    /// Removes one `--name VALUE` (or `--name=VALUE`); an error when it repeats.
    pub fn value(&mut self, name: &str) -> anyhow::Result<Option<String>> {
        let mut values = self.values(name)?;
        if values.len() > 1 {
            bail!("{name} given {} times; give it once", values.len());
        }
        Ok(values.pop())
    }

    /// Removes every `--name VALUE`, in order.
    pub fn values(&mut self, name: &str) -> anyhow::Result<Vec<String>> {
        let mut found = Vec::new();
        let prefix = format!("{name}=");
        let mut index = 0;
        while index < self.flag_end() {
            if self.items[index] == name {
                if index + 1 >= self.items.len() {
                    bail!("{name} needs a value");
                }
                self.items.remove(index);
                found.push(self.items.remove(index));
            } else if let Some(value) = self.items[index].strip_prefix(&prefix) {
                found.push(value.to_string());
                self.items.remove(index);
            } else {
                index += 1;
            }
        }
        Ok(found)
    }

    /// A numeric value.
    pub fn number<T: std::str::FromStr>(&mut self, name: &str) -> anyhow::Result<Option<T>> {
        match self.value(name)? {
            None => Ok(None),
            Some(text) => text
                .parse()
                .map(Some)
                .ok()
                .with_context(|| format!("{name} must be a number, got {text:?}")),
        }
    }

    /// Removes the next positional (non-flag) argument.
    pub fn positional(&mut self) -> Option<String> {
        let end = self.flag_end();
        if let Some(index) = self.items[..end]
            .iter()
            .position(|item| !item.starts_with('-') || item == "-")
        {
            return Some(self.items.remove(index));
        }
        if end < self.items.len() {
            self.items.remove(end); // the "--"
            if end < self.items.len() {
                return Some(self.items.remove(end));
            }
        }
        None
    }

    /// Removes every remaining positional argument.
    pub fn rest(&mut self) -> Vec<String> {
        let mut rest = Vec::new();
        while let Some(item) = self.positional() {
            rest.push(item);
        }
        rest
    }

    /// Fails on anything not consumed.
    pub fn finish(&self) -> anyhow::Result<()> {
        if let Some(extra) = self.items.iter().find(|item| *item != "--") {
            bail!("unexpected argument {extra:?}: run `ralph-hooks --help` for the usage");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(items: &[&str]) -> Args {
        Args::new(items.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn flags_anywhere_and_repeated_values() {
        let mut a = args(&[
            "start",
            "--check",
            "cargo test",
            "goal text",
            "--check=ls",
            "--json",
        ]);
        assert!(a.flag("--json"));
        assert_eq!(a.values("--check").unwrap(), vec!["cargo test", "ls"]);
        assert_eq!(a.positional().as_deref(), Some("start"));
        assert_eq!(a.positional().as_deref(), Some("goal text"));
        a.finish().unwrap();
    }

    #[test]
    fn a_flag_with_a_value_never_takes_the_next_argument() {
        let mut a = args(&["--diagnostics", "goal"]);
        assert_eq!(a.flag_with_value("--diagnostics").unwrap(), Some(None));
        assert_eq!(a.positional().as_deref(), Some("goal"));
        let mut a = args(&["goal", "--diagnostics=touched"]);
        assert_eq!(
            a.flag_with_value("--diagnostics").unwrap(),
            Some(Some("touched".to_string()))
        );
        assert_eq!(args(&["x"]).flag_with_value("--diagnostics").unwrap(), None);
        let mut a = args(&["--diagnostics", "--diagnostics=touched"]);
        assert!(a.flag_with_value("--diagnostics").is_err());
    }

    #[test]
    fn unknown_flag_is_an_error() {
        let mut a = args(&["status", "--jsn"]);
        assert_eq!(a.positional().as_deref(), Some("status"));
        assert!(a.finish().is_err());
    }

    #[test]
    fn double_dash_allows_dashed_positionals() {
        let mut a = args(&["--", "-x"]);
        assert_eq!(a.positional().as_deref(), Some("-x"));
    }
}
