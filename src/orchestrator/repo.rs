//! The repository a resume state is checked against: a
//! state saved on a branch at a commit can only be resumed where that branch
//! is checked out and that commit is still in its history. Anything else is
//! a "conflict", named with what to do about it.
//!
//! [`conflicts`] is pure; [`Repository::read`] asks git.

use std::path::Path;
use std::process::Stdio;

use serde_json::{Map, Value};

/// What git says about the project now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repository {
    /// `None` when HEAD is detached.
    pub branch: Option<String>,
    pub head: String,
}

/// Where a saved commit stands relative to HEAD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Commit {
    /// HEAD itself, or an ancestor of it: work went on from there.
    InHistory,
    /// Known to git but not in HEAD's history (reset, rebased, other branch).
    NotInHistory,
    /// Not in the repository at all.
    Unknown,
}

fn git(root: &Path, args: &[&str]) -> Option<std::process::Output> {
    crate::util::git::command(root)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .ok()
}

fn git_text(root: &Path, args: &[&str]) -> Option<String> {
    let output = git(root, args)?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
        .filter(|text| !text.is_empty())
}

impl Repository {
    /// `None` when the project is not a git repository with a commit (or
    /// git is missing).
    pub fn read(root: &Path) -> Option<Repository> {
        let head = git_text(root, &["rev-parse", "--verify", "-q", "HEAD"])?;
        let branch = git_text(root, &["symbolic-ref", "-q", "--short", "HEAD"]);
        Some(Repository { branch, head })
    }

    pub fn commit(root: &Path, commit: &str) -> Commit {
        if commit.starts_with('-') {
            return Commit::Unknown;
        }
        let known = git(root, &["cat-file", "-e", &format!("{commit}^{{commit}}")])
            .is_some_and(|output| output.status.success());
        if !known {
            return Commit::Unknown;
        }
        match git(root, &["merge-base", "--is-ancestor", commit, "HEAD"]) {
            Some(output) if output.status.success() => Commit::InHistory,
            _ => Commit::NotInHistory,
        }
    }
}

/// The `branch` and `last_commit` to record in a new state's context, when
/// the caller did not give them.
pub fn record(root: &Path, context: &mut Map<String, Value>) {
    let Some(repo) = Repository::read(root) else {
        return;
    };
    if let Some(branch) = repo.branch
        && !context.contains_key("branch")
    {
        context.insert("branch".into(), Value::String(branch));
    }
    if !context.contains_key("last_commit") {
        context.insert("last_commit".into(), Value::String(repo.head));
    }
}

/// Every conflict between a saved context and the repository, as a
/// sentence with the way out. `repo` is `None` outside a repository (no
/// conflict then: nothing to compare against);
/// `commit` is where the saved `last_commit` stands (when there is one).
pub fn conflicts(
    context: &Map<String, Value>,
    repo: Option<&Repository>,
    commit: Option<Commit>,
) -> Vec<String> {
    let saved_branch = context.get("branch").and_then(Value::as_str);
    let saved_commit = context.get("last_commit").and_then(Value::as_str);
    if saved_branch.is_none() && saved_commit.is_none() {
        return Vec::new();
    }
    // Outside a repository (or without git) there is nothing to compare
    // against: a hand-given branch must not make every resume fail.
    let Some(repo) = repo else {
        return Vec::new();
    };
    let mut found = Vec::new();
    if let Some(saved) = saved_branch
        && repo.branch.as_deref() != Some(saved)
    {
        let now = repo.branch.as_deref().unwrap_or("a detached HEAD");
        found.push(format!(
            "conflict: the state was saved on branch {saved}, but the repository is on {now}: `git checkout {saved}` first"
        ));
    }
    if let Some(saved) = saved_commit {
        match commit {
            Some(Commit::InHistory) | None => {}
            Some(Commit::NotInHistory) => found.push(format!(
                "conflict: the saved last commit {saved} is not in the history of HEAD ({}): the work it continues was reset or rebased away",
                short(&repo.head)
            )),
            Some(Commit::Unknown) => found.push(format!(
                "conflict: the saved last commit {saved} does not exist in the repository"
            )),
        }
    }
    found
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

/// [`conflicts`] against the project's repository as it is now.
pub fn check(root: &Path, context: &Map<String, Value>) -> Vec<String> {
    let repo = Repository::read(root);
    let commit = match (&repo, context.get("last_commit").and_then(Value::as_str)) {
        (Some(_), Some(saved)) => Some(Repository::commit(root, saved)),
        _ => None,
    };
    conflicts(context, repo.as_ref(), commit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn context(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    fn repo(branch: Option<&str>) -> Repository {
        Repository {
            branch: branch.map(str::to_string),
            head: "0123456789abcdef0123".into(),
        }
    }

    #[test]
    fn a_matching_repository_has_no_conflict() {
        let saved = context(json!({"branch": "feature/SPEC-1", "last_commit": "abc123"}));
        let same = repo(Some("feature/SPEC-1"));
        assert!(conflicts(&saved, Some(&same), Some(Commit::InHistory)).is_empty());
        assert!(conflicts(&context(json!({})), None, None).is_empty());
    }

    #[test]
    fn branch_and_commit_mismatches_are_conflicts() {
        let saved = context(json!({"branch": "feature/SPEC-1", "last_commit": "abc123"}));
        let found = conflicts(&saved, Some(&repo(Some("main"))), Some(Commit::Unknown));
        assert_eq!(
            found,
            vec![
                "conflict: the state was saved on branch feature/SPEC-1, but the repository is on main: `git checkout feature/SPEC-1` first",
                "conflict: the saved last commit abc123 does not exist in the repository",
            ]
        );
        let found = conflicts(&saved, Some(&repo(None)), Some(Commit::NotInHistory));
        assert!(found[0].contains("is on a detached HEAD"), "{found:?}");
        assert!(
            found[1].contains("is not in the history of HEAD (0123456789ab)"),
            "{found:?}"
        );
        assert!(
            conflicts(&saved, None, None).is_empty(),
            "outside a repository nothing can conflict"
        );
    }
}
