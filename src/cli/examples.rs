//! The examples at the end of each subcommand's `--help` (`task step add`,
//! `daemon stop`, …). The top-level commands (and `loop start`, `task
//! step`, whose help says more than examples) carry theirs beside their
//! code; the rest are kept in one table, and a unit test holds that every
//! command, at every depth, shows at least one (in `parser`'s tests).

/// (the words that name the command, its examples).
pub const SUBCOMMANDS: &[(&str, &str)] = &[
    ("loop status", "\
Examples:
  ralph-hooks loop status
  ralph-hooks loop status --json | jq .iteration"),
    ("loop pause", "\
Examples:
  ralph-hooks loop pause       # from a terminal, while Claude works; `loop resume` goes on"),
    ("loop resume", "\
Examples:
  ralph-hooks loop resume      # after the user said \"stop\" in the session"),
    ("loop cancel", "\
Examples:
  ralph-hooks loop cancel"),
    ("task start", "\
Examples:
  ralph-hooks task start \"Add OAuth login\"
  ralph-hooks task start \"Fix the flaky upload test\" --priority high"),
    ("task step set", "\
Examples:
  ralph-hooks task step set \"write the parser\" \"test it\" \"document it\""),
    ("task step add", "\
Examples:
  ralph-hooks task step add \"update the changelog\""),
    ("task step start", "\
Examples:
  ralph-hooks task step start s2
  ralph-hooks task step start s3 --note \"s2 waits for review\""),
    ("task step complete", "\
Examples:
  ralph-hooks task step complete s1
  ralph-hooks task step complete s2 --note \"all 40 tests pass\""),
    ("task step skip", "\
Examples:
  ralph-hooks task step skip s3 --note \"covered by s2\""),
    ("task step reorder", "\
Examples:
  ralph-hooks task step reorder s2 s1 s3"),
    ("task progress", "\
Examples:
  ralph-hooks task progress \"login form renders; wiring the callback next\""),
    ("task complete", "\
Examples:
  ralph-hooks task complete --summary \"OAuth login with Google and GitHub\"
  ralph-hooks task complete --force \"the user dropped s4\""),
    ("task block", "\
Examples:
  ralph-hooks task block --note \"waiting for the API key\""),
    ("task resume", "\
Examples:
  ralph-hooks task resume"),
    ("task cancel", "\
Examples:
  ralph-hooks task cancel --note \"superseded by the v2 plan\""),
    ("task status", "\
Examples:
  ralph-hooks task status
  ralph-hooks task status --json"),
    ("task list", "\
Examples:
  ralph-hooks task list
  ralph-hooks task list --json"),
    ("resume save", "\
Examples:
  ralph-hooks resume save implement 001-auth --phase build --completed T1,T2 --pending T3
  ralph-hooks resume save implement 001-auth --context branch=feat/auth"),
    ("resume phase", "\
Examples:
  ralph-hooks resume phase plan --output spec_id=001-auth --next run
  ralph-hooks resume phase run --status error --output-path log=build.log"),
    ("resume list", "\
Examples:
  ralph-hooks resume list
  ralph-hooks resume list --json"),
    ("resume show", "\
Examples:
  ralph-hooks resume show implement
  ralph-hooks resume show implement 001-auth --from T3"),
    ("resume retry", "\
Examples:
  ralph-hooks resume retry /tmp/ralph-hooks-unsaved/001-auth.json   # the path the failed save named"),
    ("pipeline start", "\
Examples:
  ralph-hooks pipeline start \"add rate limiting to the API\"
  ralph-hooks pipeline start --branch --pr \"add rate limiting to the API\""),
    ("pipeline next", "\
Examples:
  ralph-hooks pipeline next
  ralph-hooks pipeline next 001-rate-limits"),
    ("pipeline phase", "\
Examples:
  ralph-hooks pipeline phase sync
  ralph-hooks pipeline phase run 001-rate-limits"),
    ("pipeline resume", "\
Examples:
  ralph-hooks pipeline resume
  ralph-hooks pipeline resume 001-rate-limits --from run"),
    ("pipeline status", "\
Examples:
  ralph-hooks pipeline status
  ralph-hooks pipeline status --json"),
    ("daemon run", "\
Examples:
  ralph-hooks daemon run --debug   # in the foreground, saying what it does"),
    ("daemon start", "\
Examples:
  ralph-hooks daemon start"),
    ("daemon status", "\
Examples:
  ralph-hooks daemon status
  ralph-hooks daemon status --json"),
    ("daemon stop", "\
Examples:
  ralph-hooks daemon stop"),
    ("notify flush", "\
Examples:
  ralph-hooks notify flush   # send what the hooks queued for notify.webhook"),
    ("notify test", "\
Examples:
  ralph-hooks notify test    # one test body to notify.webhook now, and its answer"),
    ("telemetry status", "\
Examples:
  ralph-hooks telemetry status
  ralph-hooks telemetry status --json"),
    ("telemetry run", "\
Examples:
  ralph-hooks telemetry run --debug   # in the foreground, saying what it sends"),
    ("telemetry stop", "\
Examples:
  ralph-hooks telemetry stop"),
];

/// `command` with the examples of [`SUBCOMMANDS`] under each subcommand.
pub fn add_to(mut command: clap::Command) -> clap::Command {
    for (path, examples) in SUBCOMMANDS {
        let words: Vec<&str> = path.split(' ').collect();
        command = with_examples(command, &words, examples);
    }
    command
}

fn with_examples(command: clap::Command, words: &[&str], examples: &'static str) -> clap::Command {
    match words {
        [] => command,
        // A command's own text beside its code wins over the table.
        [last] => command.mut_subcommand(*last, |sub| {
            if sub.get_after_help().is_some() {
                sub
            } else {
                sub.after_help(examples)
            }
        }),
        [first, rest @ ..] => {
            command.mut_subcommand(*first, |sub| with_examples(sub, rest, examples))
        }
    }
}
