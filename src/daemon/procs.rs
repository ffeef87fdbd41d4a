//! What /proc says about processes: the tree below the daemon and its RSS,
//! a process's start time (to tell a reused pid from the one we started),
//! and killing the leftover process group of a server whose daemon died.

use std::collections::HashMap;

use crate::util::process::kill_group;

/// One line of `/proc/<pid>/stat`, the fields we use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcInfo {
    pub pid: u32,
    pub ppid: u32,
    pub pgid: u32,
    pub zombie: bool,
    /// Clock ticks after boot; with the pid, it names one process for good.
    pub start_time: u64,
    pub rss_pages: u64,
}

/// Parses `/proc/<pid>/stat`: "pid (comm) state ppid pgrp …"; comm may
/// hold spaces and parentheses, so the fields are counted from the last ')'.
pub fn parse_stat(text: &str) -> Option<ProcInfo> {
    let open = text.find('(')?;
    let pid = text[..open].trim().parse().ok()?;
    let close = text.rfind(')')?;
    let fields: Vec<&str> = text[close + 1..].split_whitespace().collect();
    // fields[0] is field 3 (state), so field N is fields[N - 3].
    Some(ProcInfo {
        pid,
        zombie: *fields.first()? == "Z",
        ppid: fields.get(1)?.parse().ok()?,
        pgid: fields.get(2)?.parse().ok()?,
        start_time: fields.get(19)?.parse().ok()?,
        rss_pages: fields.get(21)?.parse().ok()?,
    })
}

pub fn stat(pid: u32) -> Option<ProcInfo> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Every process we can see.
pub fn table() -> Vec<ProcInfo> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(stat)
        .collect()
}

/// `root` and everything below it (by parent pid).
pub fn tree(table: &[ProcInfo], root: u32) -> Vec<&ProcInfo> {
    let mut children: HashMap<u32, Vec<&ProcInfo>> = HashMap::new();
    for info in table {
        children.entry(info.ppid).or_default().push(info);
    }
    let mut found: Vec<&ProcInfo> = table.iter().filter(|p| p.pid == root).collect();
    let mut index = 0;
    while index < found.len() {
        let pid = found[index].pid;
        if let Some(below) = children.get(&pid) {
            found.extend(below.iter().copied().filter(|p| p.pid != pid));
        }
        index += 1;
    }
    found
}

fn page_kib() -> u64 {
    // SAFETY: sysconf(3) has no preconditions.
    let bytes = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if bytes > 0 { bytes as u64 / 1024 } else { 4 }
}

/// Resident memory of `root` and everything below it, in KiB (shared pages
/// are counted in each process, so this errs high).
pub fn tree_rss_kib(table: &[ProcInfo], root: u32) -> u64 {
    let page = page_kib();
    tree(table, root)
        .iter()
        .filter(|p| !p.zombie)
        .map(|p| p.rss_pages * page)
        .sum()
}

/// Resident memory of one process, in KiB.
pub fn rss_kib(table: &[ProcInfo], pid: u32) -> u64 {
    table
        .iter()
        .find(|p| p.pid == pid)
        .map_or(0, |p| p.rss_pages * page_kib())
}

/// Kills what is left of a server's process group from a daemon that died:
/// `pgid` is the server's pid (each server leads its own group) and
/// `start_time` its start time. A live leader with another start time is a
/// reused pid and left alone; with the leader gone, a pgid cannot have been
/// reused while members remain, so they are the server's helpers. True when
/// something was killed.
pub fn kill_leftover_group(pgid: u32, start_time: u64) -> bool {
    if pgid <= 1 || pgid == std::process::id() {
        return false;
    }
    let table = table();
    let alive_members = table.iter().any(|p| p.pgid == pgid && !p.zombie);
    match table.iter().find(|p| p.pid == pgid) {
        Some(leader) if leader.start_time != start_time => false,
        Some(leader) if leader.zombie && !alive_members => false,
        Some(_) => {
            kill_group(pgid);
            true
        }
        None if alive_members => {
            kill_group(pgid);
            true
        }
        None => false,
    }
}

/// The environment variable every server of a daemon carries (and passes
/// on to its helpers): its value is the daemon's state root. A process that
/// carries it while no daemon holds that state root is a leftover.
pub const MARKER: &str = "RALPH_HOOKS_DAEMON_ROOT";

/// Kills every process whose environment has `MARKER=value`; returns their pids.
pub fn kill_marked(value: &str) -> Vec<u32> {
    let wanted = format!("{MARKER}={value}");
    let me = std::process::id();
    let mut killed = Vec::new();
    for info in table() {
        if info.pid == me || info.zombie {
            continue;
        }
        let Ok(environ) = std::fs::read(format!("/proc/{}/environ", info.pid)) else {
            continue;
        };
        if environ
            .split(|b| *b == 0)
            .any(|entry| entry == wanted.as_bytes())
            && let Ok(pid) = libc::pid_t::try_from(info.pid)
        {
            // SAFETY: kill(2) has no memory-safety preconditions; the pid
            // was just seen carrying our marker.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            killed.push(info.pid);
        }
    }
    killed
}

/// The command line of a process, arguments joined by spaces.
pub fn cmdline(pid: u32) -> Option<String> {
    let bytes = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(
        bytes
            .split(|b| *b == 0)
            .filter(|part| !part.is_empty())
            .map(|part| String::from_utf8_lossy(part).into_owned())
            .collect::<Vec<_>>()
            .join(" "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_names_parse() {
        let line = "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 3 0 987654 123456789 2500 18446744073709551615";
        let info = parse_stat(line).unwrap();
        assert_eq!(info.pid, 4242);
        assert_eq!(info.ppid, 1);
        assert_eq!(info.pgid, 4242);
        assert_eq!(info.start_time, 987654);
        assert_eq!(info.rss_pages, 2500);
        assert!(!info.zombie);
    }

    #[test]
    fn our_own_process_is_in_the_table_with_memory() {
        let table = table();
        let me = std::process::id();
        assert!(table.iter().any(|p| p.pid == me));
        assert!(tree_rss_kib(&table, me) > 0);
        assert!(rss_kib(&table, me) > 0);
    }

    #[test]
    fn a_leftover_group_is_killed_only_when_the_start_time_matches() {
        use std::os::unix::process::CommandExt;
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id();
        let start_time = stat(pid).unwrap().start_time;
        assert!(!kill_leftover_group(pid, start_time + 1), "another process");
        assert!(crate::util::process::is_alive(pid));
        assert!(kill_leftover_group(pid, start_time));
        let status = child.wait().unwrap();
        assert!(!status.success(), "killed, not finished: {status}");
        assert!(!kill_leftover_group(std::process::id(), 0));
    }
}
