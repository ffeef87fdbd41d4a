//! Project checks inside the daemon: the engine ([`crate::engine::run`])
//! with the daemon's warm servers. Each server's files go to its worker as
//! one batch; the workers run side by side, and a batch that is not done
//! when the caller's time is up goes on in its worker, so the next check
//! of the project (the next Stop of a loop) finds the work done.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::wire::{self, CheckReply};
use super::worker::{self, BatchJob, BatchReply, Host, Job, Key, ProjectPass, ServerInfo};
use crate::engine::cli_batch::{self, CliCache};
use crate::engine::files::NoSuchPath;
use crate::engine::run::{self, JobAnswer, Options, Progress, ScanCache, ServerJob, Servers};
use crate::hook::ctx::Ctx;
use crate::lsp::LspError;
use crate::lsp::batch::FileAnswer;
use crate::lsp::servers::BatchCli;

/// A batch handed to its server's worker: where the answers come, and the
/// worker's live info (for progress); or why it could not be handed over.
type Routed = Result<(Receiver<BatchReply>, Arc<Mutex<ServerInfo>>), String>;

/// How much later than the caller's deadline a worker's answer is still
/// waited for (it answers by the deadline itself; this covers the hand-over).
const REPLY_SLACK: Duration = Duration::from_millis(200);
/// How often a caller is told how far a check has come.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// Check requests being answered now: a server's pass over the whole
/// project waits for them (see [`wait_for_checks`]).
static CHECKS_IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// Counts one check request in flight while it lives.
struct InFlight;

impl InFlight {
    fn new() -> InFlight {
        CHECKS_IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        CHECKS_IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The longest a project pass waits for the checks in flight.
const PASS_WAITS_AT_MOST: Duration = Duration::from_secs(60);

/// Waits until no check request is being answered (at most
/// [`PASS_WAITS_AT_MOST`]): a server's first pass over the whole project
/// only warms it for later checks, and started beside the check that set it
/// off it took the cores that check's own ast-grep rules were waiting for.
fn wait_for_checks() {
    let until = Instant::now() + PASS_WAITS_AT_MOST;
    while CHECKS_IN_FLIGHT.load(Ordering::SeqCst) > 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs a check request for the daemon's project.
pub fn check(
    host: Arc<dyn Host>,
    project: &Path,
    options: &Options,
    debug: bool,
    progress: &mut dyn FnMut(usize, usize),
) -> CheckReply {
    let _in_flight = InFlight::new();
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
        // workers' batches, and are kept in the daemon's cache; but once the
        // checker's server has checked the whole project, a check after
        // changes asks the server, which re-checks only what they touch.
        let cache = cli_cache();
        let by_cli: Vec<bool> = jobs
            .iter()
            .map(|job| {
                job.cli.is_some_and(|cli| {
                    let changed = cli.rechecks_on_server() && !cache.is_current(job);
                    let knows = changed && self.server_knows_project(job);
                    let slower = knows && server_slower(&cache, job);
                    let to_server = knows && !slower;
                    if changed && !to_server && cache.run_time(job).is_some() {
                        self.host.log(&format!(
                            "{}: the project changed since its command line ran; the command line checks its {} file(s) again ({})",
                            job.launch.name,
                            job.files.len(),
                            if slower {
                                "its server re-checked more slowly"
                            } else {
                                "its server has not checked the whole project as it is configured now"
                            }
                        ));
                    }
                    if to_server {
                        self.host.log(&format!(
                            "{}: the project changed since its command line ran; asking its server about its {} file(s), as it has checked the whole project",
                            job.launch.name,
                            job.files.len()
                        ));
                    }
                    !to_server
                })
            })
            .collect();
        let cli_answers: Vec<Option<std::thread::JoinHandle<JobAnswer>>> = jobs
            .iter()
            .zip(&by_cli)
            .map(|(job, by_cli)| {
                let cli = job.cli.filter(|_| *by_cli)?;
                let job = job.clone();
                let cache = Arc::clone(&cache);
                let host = Arc::clone(&self.host);
                std::thread::Builder::new()
                    .name("check-cli".into())
                    .spawn(move || {
                        let answer = cache.run(cli, &job, deadline);
                        // A command line that could not check the project
                        // (its configuration rejected: an environment that
                        // is not there) leaves its server nothing to stand
                        // in for: the server would fall back to defaults
                        // and call the project clean (attack AE-4).
                        if cli.rechecks_on_server() && answer.failure.is_none() {
                            start_project_pass(host, cache, cli, job);
                        }
                        answer
                    })
                    .ok()
            })
            .collect();
        let sent: Vec<(usize, Routed)> = jobs
            .iter()
            .zip(&by_cli)
            .filter(|(_, by_cli)| !**by_cli)
            .map(|(job, _)| {
                let (reply, answer) = mpsc::sync_channel(1);
                let key = server_key(job);
                let batch = Job::Batch {
                    job: Box::new(batch_job(job, deadline)),
                    reply,
                };
                let routed = Arc::clone(&self.host)
                    .route(&key, batch)
                    .map(|info| (answer, info));
                (job.files.len(), routed)
            })
            .collect();
        let total: usize = jobs.iter().map(|job| job.files.len()).sum();
        let sent_at = Instant::now();
        let mut answers: Vec<Option<JobAnswer>> = sent.iter().map(|_| None).collect();
        let mut answered_after: Vec<Duration> = sent.iter().map(|_| Duration::ZERO).collect();
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
                            answered_after[index] = sent_at.elapsed();
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
        let mut from_workers = answers.into_iter().flatten().zip(answered_after);
        let answers: Vec<JobAnswer> = cli_answers
            .into_iter()
            .zip(&jobs)
            .zip(&by_cli)
            .map(|((cli, job), by_cli)| match cli {
                Some(handle) => handle.join().unwrap_or_else(|_| JobAnswer {
                    answers: vec![FileAnswer::Pending; job.files.len()],
                    failure: None,
                }),
                None => {
                    let Some((answer, took)) = from_workers.next() else {
                        return JobAnswer {
                            answers: vec![FileAnswer::Pending; job.files.len()],
                            failure: None,
                        };
                    };
                    if job.cli.is_some() && !by_cli {
                        self.server_rechecked(&cache, job, &answer, took);
                    }
                    answer
                }
            })
            .collect();
        answers
    }
}

impl WorkerServers {
    fn server_knows_project(&self, job: &ServerJob) -> bool {
        knows_project(self.host.as_ref(), job)
    }

    /// A re-check that went to the server: one it failed (where the
    /// command line would not have) makes the next check run the command
    /// line and a new pass; one that took longer than the command line's
    /// whole run makes the command line check this project from now on.
    fn server_rechecked(
        &self,
        cache: &CliCache,
        job: &ServerJob,
        answer: &JobAnswer,
        took: Duration,
    ) {
        let complete = answer.failure.is_none()
            && answer
                .answers
                .iter()
                .all(|answer| !matches!(answer, FileAnswer::Pending));
        if answer.failure.is_some() {
            self.forget_project_pass(job);
        }
        if !complete {
            return;
        }
        update_record(job, |record| record.server_recheck = Some(took));
        if let Some(cli_took) = cache.run_time(job)
            && took > cli_took
        {
            self.host.log(&format!(
                "{}: its server re-checked the project in {:.1} s, its command line checks it in {:.1} s: the command line checks this project from now on",
                job.launch.name,
                took.as_secs_f64(),
                cli_took.as_secs_f64()
            ));
        }
    }

    fn forget_project_pass(&self, job: &ServerJob) {
        let key = server_key(job);
        let registry = self.host.lock_registry();
        if let Some(handle) = registry.workers.get(&key)
            && let Ok(mut info) = handle.info.lock()
        {
            info.project_pass = ProjectPass::NotRun;
        }
    }
}

/// The batch a worker runs for `job`.
fn batch_job(job: &ServerJob, deadline: Instant) -> BatchJob {
    BatchJob {
        fingerprint: wire::fingerprint(&job.launch),
        launch: job.launch.clone(),
        files: job.files.clone(),
        deadline,
        startup: job.startup.unwrap_or(worker::DEFAULT_STARTUP),
        silence: job.silence,
    }
}

/// How long the server's background check of the whole project may take.
const PROJECT_PASS_LIMIT: Duration = Duration::from_secs(10 * 60);
/// Background checks of the whole project one server key gets in a
/// daemon's life: a server that keeps being lost (the memory ceiling, a
/// crash) is not given its whole project again and again.
const MAX_PROJECT_PASSES: u32 = 2;

/// What the daemon learned about a command-line checker's server.
#[derive(Debug, Default, Clone, Copy)]
struct Record {
    /// How long its last complete re-check after changes took.
    server_recheck: Option<Duration>,
    /// Background checks of the whole project started.
    passes: u32,
}

/// The job's server, as the daemon's registry names its worker.
fn server_key(job: &ServerJob) -> Key {
    (job.launch.name.clone(), job.launch.root.clone())
}

/// The job's server has checked the whole project, under the same
/// configuration, in the process that runs now.
fn knows_project(host: &dyn Host, job: &ServerJob) -> bool {
    let configs = cli_batch::config_stamps(job);
    let registry = host.lock_registry();
    registry
        .workers
        .get(&server_key(job))
        .is_some_and(|handle| {
            handle
                .info
                .lock()
                .is_ok_and(|info| info.knows_project(Some(configs)))
        })
}

fn records() -> &'static Mutex<HashMap<Key, Record>> {
    static RECORDS: OnceLock<Mutex<HashMap<Key, Record>>> = OnceLock::new();
    RECORDS.get_or_init(Mutex::default)
}

fn record(job: &ServerJob) -> Record {
    let key = server_key(job);
    records()
        .lock()
        .ok()
        .and_then(|records| records.get(&key).copied())
        .unwrap_or_default()
}

fn update_record(job: &ServerJob, change: impl FnOnce(&mut Record)) {
    let key = server_key(job);
    if let Ok(mut records) = records().lock() {
        change(records.entry(key).or_default());
    }
}

/// The server's last re-check of this project took longer than the
/// command line's whole run: the command line is the better way here
/// (ty's server re-checking ~1,800 files after one change took twice
/// `ty check`'s time on the standard library with its tests).
fn server_slower(cache: &CliCache, job: &ServerJob) -> bool {
    match (record(job).server_recheck, cache.run_time(job)) {
        (Some(server), Some(cli)) => server > cli,
        _ => false,
    }
}

/// After the checker's command line has checked the project, has its
/// server check the whole project too, in the background (after the
/// command line's run, never beside it: both want every core), so that
/// later checks after changes can ask the server. At most one pass per
/// server at a time; none when the server already knows the project.
fn start_project_pass(host: Arc<dyn Host>, cache: Arc<CliCache>, cli: BatchCli, job: ServerJob) {
    static RUNNING: OnceLock<Mutex<HashSet<Key>>> = OnceLock::new();
    let running = RUNNING.get_or_init(Mutex::default);
    let key = server_key(&job);
    let configs = cli_batch::config_stamps(&job);
    if server_slower(&cache, &job) || record(&job).passes >= MAX_PROJECT_PASSES {
        return;
    }
    if knows_project(host.as_ref(), &job) {
        return;
    }
    let first = running
        .lock()
        .is_ok_and(|mut running| running.insert(key.clone()));
    if !first {
        return;
    }
    update_record(&job, |record| record.passes += 1);
    let spawned = std::thread::Builder::new()
        .name("project-pass".into())
        .spawn({
            let key = key.clone();
            move || {
                if cache.is_current(&job) {
                    // Wait for the command line's run, if it is still going.
                    cache.run(cli, &job, Instant::now() + PROJECT_PASS_LIMIT);
                }
                wait_for_checks();
                run_project_pass(&host, &key, &job, configs);
                if let Ok(mut running) = running.lock() {
                    running.remove(&key);
                }
            }
        });
    if spawned.is_err()
        && let Ok(mut running) = running.lock()
    {
        running.remove(&key);
    }
}

/// The server's check of every file of `job`; marks the server as knowing
/// the project when every file was answered.
fn run_project_pass(host: &Arc<dyn Host>, key: &Key, job: &ServerJob, configs: u64) {
    let started = Instant::now();
    let (reply, answer) = mpsc::sync_channel(1);
    let batch = Job::Batch {
        job: Box::new(batch_job(job, started + PROJECT_PASS_LIMIT)),
        reply,
    };
    let info = match Arc::clone(host).route(key, batch) {
        Ok(info) => info,
        Err(why) => {
            host.log(&format!("{}: no check of the whole project: {why}", key.0));
            return;
        }
    };
    let outcome = answer.recv_timeout(PROJECT_PASS_LIMIT + REPLY_SLACK);
    let complete = outcome.as_ref().is_ok_and(|reply| {
        reply.failure.is_none()
            && reply
                .answers
                .iter()
                .all(|answer| !matches!(answer, FileAnswer::Pending))
    });
    let pid = info.lock().ok().and_then(|info| info.pid);
    match (complete, pid) {
        (true, Some(pid)) => {
            if let Ok(mut info) = info.lock() {
                info.project_pass = ProjectPass::Done { pid, configs };
            }
            host.log(&format!(
                "{}: checked the whole project ({} files) in {:.1} s; project checks after changes ask it",
                key.0,
                job.files.len(),
                started.elapsed().as_secs_f64()
            ));
        }
        _ => {
            let why = match outcome {
                Ok(reply) => reply
                    .failure
                    .map(|failure| LspError::from(failure).to_string())
                    .unwrap_or_else(|| "not every file was answered".into()),
                Err(_) => "no answer".into(),
            };
            host.log(&format!(
                "{}: its check of the whole project did not finish ({why}); the command line goes on checking the project",
                key.0
            ));
        }
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
    let (warming, starting, name) = info
        .lock()
        .map(|info| (info.warming, info.starting, info.name.clone()))
        .unwrap_or_default();
    let failure = if warming {
        LspError::WarmingUp {
            server: name,
            waited: Duration::ZERO,
            // Past `initialize`: loading the project, or stuck there
            // (engine attack E-10: called "still starting" for ever).
            loading: !starting,
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
