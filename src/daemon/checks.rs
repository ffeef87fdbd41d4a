//! Project checks inside the daemon: the engine ([`crate::engine::run`])
//! with the daemon's warm servers. Each server's files go to its worker as
//! one batch; the workers run side by side, and a batch that is not done
//! when the caller's time is up goes on in its worker, so the next check
//! of the project (the next Stop of a loop) finds the work done.

use std::path::Path;
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::wire::{self, CheckReply};
use super::worker::{self, BatchJob, BatchReply, Host, Job, ServerInfo};
use crate::engine::cli_batch::CliCache;
use crate::engine::files::NoSuchPath;
use crate::engine::run::{self, JobAnswer, Options, Progress, ScanCache, ServerJob, Servers};
use crate::hook::ctx::Ctx;
use crate::lsp::LspError;
use crate::lsp::batch::FileAnswer;

/// A batch handed to its server's worker: where the answers come, and the
/// worker's live info (for progress); or why it could not be handed over.
type Routed = Result<(Receiver<BatchReply>, Arc<Mutex<ServerInfo>>), String>;

/// How much later than the caller's deadline a worker's answer is still
/// waited for (it answers by the deadline itself; this covers the hand-over).
const REPLY_SLACK: Duration = Duration::from_millis(200);
/// How often a caller is told how far a check has come.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// Runs a check request for the daemon's project.
pub fn check(
    host: Arc<dyn Host>,
    project: &Path,
    options: &Options,
    debug: bool,
    progress: &mut dyn FnMut(usize, usize),
) -> CheckReply {
    let started = Instant::now();
    let ctx = match Ctx::for_daemon(
        project.to_path_buf(),
        host.state_root().to_path_buf(),
        debug,
    ) {
        Ok(ctx) => ctx,
        Err(error) => {
            return CheckReply::NoSuchPath {
                path: format!("{} ({error:#})", project.display()),
            };
        }
    };
    let mut servers = WorkerServers {
        host,
        scan_cache: scan_cache(),
    };
    let mut last = Instant::now() - PROGRESS_EVERY;
    let mut throttled = |step: Progress| {
        if last.elapsed() >= PROGRESS_EVERY || step.done == step.total {
            last = Instant::now();
            progress(step.done, step.total);
        }
    };
    match run::check_project(&ctx, options, &mut servers, &mut throttled) {
        Ok(report) => CheckReply::Report {
            report: Box::new(report),
            elapsed_ms: started.elapsed().as_millis() as u64,
        },
        Err(NoSuchPath(path)) => CheckReply::NoSuchPath { path },
    }
}

/// The daemon's ast-grep findings, kept between checks.
fn scan_cache() -> Arc<ScanCache> {
    static CACHE: OnceLock<Arc<ScanCache>> = OnceLock::new();
    Arc::clone(CACHE.get_or_init(Arc::default))
}

/// The engine's servers, as the daemon's workers.
struct WorkerServers {
    host: Arc<dyn Host>,
    scan_cache: Arc<ScanCache>,
}

impl Servers for WorkerServers {
    fn scan_cache(&self) -> Option<Arc<ScanCache>> {
        Some(Arc::clone(&self.scan_cache))
    }

    fn check(
        &mut self,
        jobs: Vec<ServerJob>,
        deadline: Instant,
        progress: &mut dyn FnMut(Progress),
    ) -> Vec<JobAnswer> {
        // Jobs of a checker's own command line run here, beside the
        // workers' batches, and are kept in the daemon's cache.
        let cli_answers: Vec<Option<std::thread::JoinHandle<JobAnswer>>> = jobs
            .iter()
            .map(|job| {
                let cli = job.cli?;
                let job = job.clone();
                let cache = cli_cache();
                std::thread::Builder::new()
                    .name("check-cli".into())
                    .spawn(move || cache.run(cli, &job, deadline))
                    .ok()
            })
            .collect();
        let sent: Vec<(usize, Routed)> = jobs
            .iter()
            .filter(|job| job.cli.is_none())
            .map(|job| {
                let (reply, answer) = mpsc::sync_channel(1);
                let key = (job.launch.name.clone(), job.launch.root.clone());
                let batch = Job::Batch {
                    job: Box::new(BatchJob {
                        fingerprint: wire::fingerprint(&job.launch),
                        launch: job.launch.clone(),
                        files: job.files.clone(),
                        deadline,
                        startup: job.startup.unwrap_or(worker::DEFAULT_STARTUP),
                        silence: job.silence,
                    }),
                    reply,
                };
                let routed = Arc::clone(&self.host)
                    .route(&key, batch)
                    .map(|info| (answer, info));
                (job.files.len(), routed)
            })
            .collect();
        let total: usize = jobs.iter().map(|job| job.files.len()).sum();
        let mut answers: Vec<Option<JobAnswer>> = sent.iter().map(|_| None).collect();
        loop {
            let mut done = 0;
            for (index, (n_files, routed)) in sent.iter().enumerate() {
                if answers[index].is_some() {
                    done += n_files;
                    continue;
                }
                match routed {
                    Err(why) => {
                        answers[index] = Some(JobAnswer {
                            answers: vec![FileAnswer::Pending; *n_files],
                            failure: Some(LspError::Exited {
                                during: "a project check".into(),
                                detail: format!(" ({why})"),
                            }),
                        });
                        done += n_files;
                    }
                    Ok((answer, info)) => match answer.try_recv() {
                        Ok(reply) => {
                            answers[index] = Some(JobAnswer {
                                answers: reply.answers,
                                failure: reply.failure.map(LspError::from),
                            });
                            done += n_files;
                        }
                        Err(mpsc::TryRecvError::Empty) => {
                            done += info.lock().map(|i| i.batch_done).unwrap_or(0);
                            if Instant::now() >= deadline + REPLY_SLACK {
                                answers[index] = Some(late_answer(*n_files, info));
                            }
                        }
                        Err(mpsc::TryRecvError::Disconnected) => {
                            answers[index] = Some(late_answer(*n_files, info));
                        }
                    },
                }
            }
            progress(Progress {
                done: done.min(total),
                total,
            });
            if answers.iter().all(Option::is_some) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut from_workers = answers.into_iter().flatten();
        cli_answers
            .into_iter()
            .zip(&jobs)
            .map(|(cli, job)| match cli {
                Some(handle) => handle.join().unwrap_or_else(|_| JobAnswer {
                    answers: vec![FileAnswer::Pending; job.files.len()],
                    failure: None,
                }),
                None => from_workers.next().unwrap_or_else(|| JobAnswer {
                    answers: vec![FileAnswer::Pending; job.files.len()],
                    failure: None,
                }),
            })
            .collect()
    }
}

/// The daemon's command-line check results, kept between checks.
fn cli_cache() -> Arc<CliCache> {
    static CACHE: OnceLock<Arc<CliCache>> = OnceLock::new();
    Arc::clone(CACHE.get_or_init(Arc::default))
}

/// A worker that did not answer in time (still starting its server):
/// every file pending, and why.
fn late_answer(n_files: usize, info: &Mutex<ServerInfo>) -> JobAnswer {
    let (warming, name) = info
        .lock()
        .map(|info| (info.warming, info.name.clone()))
        .unwrap_or_default();
    let failure = if warming {
        LspError::WarmingUp {
            server: name,
            waited: Duration::ZERO,
        }
    } else {
        LspError::Timeout {
            waiting_for: "the daemon's server".into(),
            after: Duration::ZERO,
            detail: String::new(),
        }
    };
    JobAnswer {
        answers: vec![FileAnswer::Pending; n_files],
        failure: Some(failure),
    }
}
