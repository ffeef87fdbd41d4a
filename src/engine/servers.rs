//! Whoever runs the language servers for a project check ([`Servers`]):
//! the daemon's warm workers (in `crate::daemon`), or [`LocalServers`],
//! started in this process for one check; and the ast-grep findings a
//! long-lived runner keeps between checks ([`ScanCache`]).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::cli_batch;
use super::jobs::{JobAnswer, Progress, ServerJob};
use crate::astgrep::{FileScan, Finding, RuleSet};
use crate::lsp::batch::FileAnswer;
use crate::lsp::{Client, LspError};
use crate::util::fsread::{self, Links};
use crate::util::text::fnv1a;

/// Whoever runs the language servers for a check.
pub trait Servers {
    /// Checks every job on its server, all at once, until `deadline`;
    /// `progress` is called now and then from the calling thread.
    fn check(
        &mut self,
        jobs: Vec<ServerJob>,
        deadline: Instant,
        progress: &mut dyn FnMut(Progress),
    ) -> Vec<JobAnswer>;

    /// Findings kept from earlier checks, when this runner lives long
    /// enough for that (the daemon).
    fn scan_cache(&self) -> Option<Arc<ScanCache>> {
        None
    }
}

type Scanned = (u64, u64, Vec<Finding>);

/// ast-grep findings per file, kept with the text and rules they came
/// from, so a check of an unchanged file does not parse it again.
#[derive(Debug, Default)]
pub struct ScanCache {
    /// Per file: its size and mtime stamp, and what the rules found in it.
    files: Mutex<HashMap<PathBuf, Scanned>>,
}

/// Files kept in a [`ScanCache`] at most (a larger project still works; the
/// cache then forgets everything and starts over).
const SCAN_CACHE_FILES: usize = 50_000;

impl ScanCache {
    /// The rules' findings for `files`, in order: kept ones where the text
    /// and rules are unchanged, the others scanned (in parallel).
    pub fn scan(&self, rules: &RuleSet, files: &[PathBuf]) -> Vec<FileScan> {
        let results = self.scan_until(rules, files, &std::sync::atomic::AtomicBool::new(false));
        FileScan::or_failed(results, files)
    }

    /// [`ScanCache::scan`] that scans no new file once `stop` is set: `None`
    /// for a file not scanned.
    pub fn scan_until(
        &self,
        rules: &RuleSet,
        files: &[PathBuf],
        stop: &std::sync::atomic::AtomicBool,
    ) -> Vec<Option<FileScan>> {
        let fingerprint = rules.fingerprint();
        let hashes: Vec<Option<u64>> = files
            .iter()
            .map(|path| {
                fsread::read_bytes(path, crate::astgrep::scan::MAX_FILE_BYTES, Links::Follow)
                    .ok()
                    .flatten()
                    .map(|bytes| fnv1a(&bytes))
            })
            .collect();
        let mut results: Vec<Option<FileScan>> = vec![None; files.len()];
        if let Ok(kept) = self.files.lock() {
            for (index, (path, hash)) in files.iter().zip(&hashes).enumerate() {
                if let (Some(hash), Some((rules_seen, hash_seen, findings))) =
                    (hash, kept.get(path))
                    && *rules_seen == fingerprint
                    && hash_seen == hash
                {
                    results[index] = Some(FileScan {
                        path: path.clone(),
                        findings: findings.clone(),
                        skipped: None,
                    });
                }
            }
        }
        let missing: Vec<PathBuf> = files
            .iter()
            .zip(&results)
            .filter(|(_, result)| result.is_none())
            .map(|(path, _)| path.clone())
            .collect();
        let (scanned, _) = rules.scan_files_until(&missing, stop);
        let mut scanned = scanned.into_iter();
        if let Ok(mut kept) = self.files.lock() {
            if kept.len() + missing.len() > SCAN_CACHE_FILES {
                kept.clear();
            }
            for (index, hash) in hashes.iter().enumerate() {
                if results[index].is_some() {
                    continue;
                }
                let Some(scan) = scanned.next() else {
                    break;
                };
                if let (Some(hash), Some(scan)) = (hash, &scan)
                    && scan.skipped.is_none()
                {
                    kept.insert(
                        scan.path.clone(),
                        (fingerprint, *hash, scan.findings.clone()),
                    );
                }
                results[index] = scan;
            }
        }
        results
    }
}

/// Servers started in this process for one check, one thread per server,
/// and shut down at the end: what runs when the daemon is off.
#[derive(Debug, Default)]
pub struct LocalServers {
    /// Time each server gets to exit after `shutdown`.
    pub grace: Duration,
}

impl Servers for LocalServers {
    fn check(
        &mut self,
        jobs: Vec<ServerJob>,
        deadline: Instant,
        progress: &mut dyn FnMut(Progress),
    ) -> Vec<JobAnswer> {
        let total: usize = jobs.iter().map(|job| job.files.len()).sum();
        let counters: Vec<Arc<AtomicUsize>> =
            jobs.iter().map(|_| Arc::new(AtomicUsize::new(0))).collect();
        let done = || counters.iter().map(|c| c.load(Ordering::Relaxed)).sum();
        let grace = self.grace;
        std::thread::scope(|scope| {
            let handles: Vec<_> = jobs
                .into_iter()
                .zip(&counters)
                .map(|(job, counter)| {
                    let counter = Arc::clone(counter);
                    scope.spawn(move || run_job_here(job, deadline, grace, &counter))
                })
                .collect();
            while handles.iter().any(|handle| !handle.is_finished()) {
                progress(Progress {
                    done: done(),
                    total,
                });
                std::thread::sleep(Duration::from_millis(50));
            }
            progress(Progress {
                done: done(),
                total,
            });
            handles
                .into_iter()
                .map(|handle| {
                    handle.join().unwrap_or_else(|_| JobAnswer {
                        answers: Vec::new(),
                        failure: Some(LspError::Exited {
                            during: "a project check".into(),
                            detail: " (the check's thread panicked)".into(),
                        }),
                    })
                })
                .collect()
        })
    }
}

/// One server's job in this process: start it, batch, shut it down (or run
/// the checker's own command line).
fn run_job_here(
    job: ServerJob,
    deadline: Instant,
    grace: Duration,
    done: &AtomicUsize,
) -> JobAnswer {
    if let Some(cli) = job.cli {
        let answer = cli_batch::run(cli, &job, deadline);
        done.store(job.files.len(), Ordering::Relaxed);
        return answer;
    }
    let pending = || vec![FileAnswer::Pending; job.files.len()];
    let mut client = match Client::start(&job.launch, deadline) {
        Ok(client) => client,
        Err(error) => {
            return JobAnswer {
                answers: pending(),
                failure: Some(error),
            };
        }
    };
    client.batch_add(&job.files);
    let mut failure = None;
    loop {
        let until = (Instant::now() + Duration::from_millis(100)).min(deadline);
        if let Err(error) = client.batch_step(until, job.silence) {
            failure = Some(error);
            break;
        }
        done.store(client.batch_progress().done, Ordering::Relaxed);
        if client.batch_done() || Instant::now() >= deadline {
            break;
        }
    }
    let answers = job
        .files
        .iter()
        .map(|file| client.batch_answer(&file.path))
        .collect();
    client.batch_end();
    client.shutdown(grace);
    JobAnswer { answers, failure }
}
