//! Telling a usage-limit notice from an answer, and when the limit resets.
//!
//! Claude Code 2.1.330 ends a turn that hit a limit with `StopFailure`
//! (`error: "rate_limit"`) and shows one of these texts, which also become
//! the failed turn's transcript row:
//! - `You've hit your limit · resets 3pm (UTC)`,
//!   `You've hit your 5-hour limit · resets 12:18pm (UTC)` (also `weekly`,
//!   `Opus`, `Sonnet`, `session`, `monthly spend`) for a subscription;
//! - `API Error: Request rejected (429) · …` for an API key.
//!
//! A future client that sent a Stop instead would carry the same text as
//! `last_assistant_message`; the Stop hook then spends no iteration.

use chrono::{DateTime, Duration, NaiveTime, Utc};

/// Whether `text` is a limit notice rather than something the model said.
pub fn is_limit_notice(text: &str) -> bool {
    let text = text.trim();
    (text.starts_with("You've hit your ") && first_line(text).contains("limit"))
        || text.starts_with("API Error: Request rejected (429)")
        || text.starts_with("API Error: 429")
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

/// The reset time in a notice's `· resets 12:18pm (UTC)`, as the next such
/// time after `now`. Only UTC is understood (the zone is the user's own and
/// the hooks keep no zone database); anything else is `None` and the notice
/// is shown as it is.
pub fn resets_at_from_text(text: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let after = first_line(text).split("resets ").nth(1)?;
    let (time, zone) = after.split_once(" (")?;
    if !zone
        .trim_end()
        .trim_end_matches(')')
        .eq_ignore_ascii_case("utc")
    {
        return None;
    }
    let time = time.trim().to_ascii_lowercase();
    let (clock, pm) = if let Some(clock) = time.strip_suffix("pm") {
        (clock, true)
    } else if let Some(clock) = time.strip_suffix("am") {
        (clock, false)
    } else {
        return None;
    };
    let (hour, minute) = match clock.split_once(':') {
        Some((h, m)) => (h.parse::<u32>().ok()?, m.parse::<u32>().ok()?),
        None => (clock.parse::<u32>().ok()?, 0),
    };
    if !(1..=12).contains(&hour) {
        return None;
    }
    let hour24 = (hour % 12) + if pm { 12 } else { 0 };
    let at = NaiveTime::from_hms_opt(hour24, minute, 0)?;
    let today = now.date_naive().and_time(at).and_utc();
    Some(if today > now {
        today
    } else {
        today + Duration::days(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn notices_and_answers() {
        assert!(is_limit_notice(
            "You've hit your 5-hour limit · resets 12:18pm (UTC)"
        ));
        assert!(is_limit_notice("You've hit your limit · resets 3pm (UTC)"));
        assert!(is_limit_notice(
            "API Error: Request rejected (429) · This request would exceed your account's rate limit."
        ));
        assert!(!is_limit_notice("You've hit your stride: all tests pass."));
        assert!(!is_limit_notice(
            "I fixed the rate limit bug. You've hit your limit is the message."
        ));
        assert!(!is_limit_notice("API Error: 529 Overloaded."));
    }

    #[test]
    fn reset_times_in_utc() {
        let now = at("2026-11-24T10:00:00Z");
        assert_eq!(
            resets_at_from_text("You've hit your 5-hour limit · resets 12:18pm (UTC)", now),
            Some(at("2026-11-24T12:18:00Z"))
        );
        assert_eq!(
            resets_at_from_text("You've hit your limit · resets 3am (UTC)", now),
            Some(at("2026-11-25T03:00:00Z"))
        );
        assert_eq!(
            resets_at_from_text("You've hit your limit · resets 12am (UTC)", now),
            Some(at("2026-11-25T00:00:00Z"))
        );
        assert_eq!(
            resets_at_from_text("You've hit your limit · resets 3pm (Europe/Paris)", now),
            None
        );
        assert_eq!(
            resets_at_from_text("API Error: Request rejected (429)", now),
            None
        );
    }
}
