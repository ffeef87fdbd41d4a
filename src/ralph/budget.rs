//! Loop budgets, pure: how many tokens, how much time and how many
//! (estimated) dollars a loop may spend, what it has spent, and what a
//! follow-up prompt says about it.
//!
//! Tokens come from the `message.usage` of the session's assistant entries
//! in the transcript ([`crate::hook::transcript::usage_since`]); time is the
//! loop's wall time minus the time it spent paused; the cost is an
//! **estimate**: the tokens priced with a table per model family (USD per
//! million tokens), which the project config can change (`budget.prices`).
//! Claude Code's own figure (`/cost`) is the one to trust; this one is for
//! stopping a loop, not for billing.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};

use crate::hook::transcript::Tokens;

/// At this share of a budget the follow-up prompt and the user are warned.
pub const WARN_AT: f64 = 0.8;

/// Iterations in a row that fix nothing while spending tokens before
/// `--stop-when-stuck` ends the loop.
pub const DEFAULT_STUCK_AFTER: u32 = 3;

/// What the loop may spend; each limit is optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Active time (wall time minus paused time), in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_secs: Option<u64>,
    /// Estimated cost in USD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// `--stop-when-stuck`: end the loop after this many iterations in a
    /// row that fixed nothing while spending tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stuck_after: Option<u32>,
}

impl Budget {
    pub fn is_empty(&self) -> bool {
        *self == Budget::default()
    }
}

/// What the loop has spent so far (tokens and the estimated cost; time is
/// computed from the clock).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Spend {
    #[serde(default)]
    pub tokens: Tokens,
    #[serde(default)]
    pub cost_usd: f64,
    /// Whether some Stop could not read the transcript, so the figures may
    /// be low.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub incomplete: bool,
}

impl Spend {
    pub fn is_zero(&self) -> bool {
        self.tokens.total() == 0 && self.cost_usd == 0.0
    }
}

/// Which budget a [`Line`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Tokens,
    Time,
    Cost,
}

impl Kind {
    /// The name in state (`budget_warned`), events and the webhook.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Tokens => "tokens",
            Kind::Time => "time",
            Kind::Cost => "cost",
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Kind::Tokens => "token budget",
            Kind::Time => "time budget",
            Kind::Cost => "cost budget (estimated)",
        }
    }
}

/// One budget with what was used of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Line {
    pub kind: Kind,
    pub used: f64,
    pub limit: f64,
}

impl Line {
    pub fn fraction(&self) -> f64 {
        if self.limit <= 0.0 {
            1.0
        } else {
            self.used / self.limit
        }
    }

    pub fn exhausted(&self) -> bool {
        self.used >= self.limit
    }

    fn amount(&self, value: f64) -> String {
        match self.kind {
            Kind::Tokens => format_tokens(value.max(0.0) as u64),
            Kind::Time => human_duration(value as i64),
            Kind::Cost => format_usd(value),
        }
    }

    /// `tokens: 41,230 of 200,000 used (158,770 left)`.
    pub fn describe(&self) -> String {
        let left = (self.limit - self.used).max(0.0);
        format!(
            "{}: {} of {} used ({} left, {:.0} %)",
            self.kind.noun(),
            self.amount(self.used),
            self.amount(self.limit),
            self.amount(left),
            (self.fraction() * 100.0).floor()
        )
    }

    /// `the token budget is exhausted: 205,000 tokens used of 200,000`.
    pub fn describe_exhausted(&self) -> String {
        format!(
            "the {} is exhausted: {} used of {}",
            self.kind.noun(),
            self.amount(self.used),
            self.amount(self.limit)
        )
    }
}

/// The budget's lines, in a fixed order, for what has been spent.
pub fn lines(budget: &Budget, spend: &Spend, active_secs: i64) -> Vec<Line> {
    let mut lines = Vec::new();
    if let Some(limit) = budget.max_tokens {
        lines.push(Line {
            kind: Kind::Tokens,
            used: spend.tokens.total() as f64,
            limit: limit as f64,
        });
    }
    if let Some(limit) = budget.max_secs {
        lines.push(Line {
            kind: Kind::Time,
            used: active_secs.max(0) as f64,
            limit: limit as f64,
        });
    }
    if let Some(limit) = budget.max_cost_usd {
        lines.push(Line {
            kind: Kind::Cost,
            used: spend.cost_usd,
            limit,
        });
    }
    lines
}

/// The first exhausted budget, if any.
pub fn exhausted(lines: &[Line]) -> Option<Line> {
    lines.iter().copied().find(Line::exhausted)
}

/// Budgets at or past [`WARN_AT`] that were not warned about yet.
pub fn newly_near(lines: &[Line], warned: &BTreeSet<String>) -> Vec<Line> {
    lines
        .iter()
        .copied()
        .filter(|line| line.fraction() >= WARN_AT && !warned.contains(line.kind.as_str()))
        .collect()
}

/// The follow-up prompt's budget paragraph: every budget with what is left,
/// and a warning for each one at 80 % or more.
pub fn prompt_lines(lines: &[Line]) -> String {
    let mut text = String::new();
    for line in lines {
        let _ = writeln!(text, "- {}", line.describe());
    }
    for line in lines.iter().filter(|l| l.fraction() >= WARN_AT) {
        let _ = writeln!(
            text,
            "- WARNING: {:.0} % of the {} is used. Finish what matters most first; when it runs out the loop ends as FAILED.",
            (line.fraction() * 100.0).floor(),
            line.kind.noun()
        );
    }
    text
}

/// A short spend summary: `41,230 tokens, ~$0.84 (estimate), 12m 05s`.
pub fn summary(spend: &Spend, active_secs: i64) -> String {
    let mut parts = vec![format!("{} tokens", format_tokens(spend.tokens.total()))];
    if spend.cost_usd > 0.0 {
        parts.push(format!("~{} (estimate)", format_usd(spend.cost_usd)));
    }
    parts.push(human_duration(active_secs));
    let mut text = parts.join(", ");
    if spend.incomplete {
        text.push_str(" (some turns could not be read)");
    }
    text
}

/// The spend and budgets as JSON, for `status --json`, `loop status --json`
/// and the monitor.
pub fn view(budget: &Budget, spend: &Spend, active_secs: i64) -> serde_json::Value {
    let budgets: Vec<serde_json::Value> = lines(budget, spend, active_secs)
        .iter()
        .map(|line| {
            serde_json::json!({"kind": line.kind.as_str(), "used": line.used, "limit": line.limit,
                               "fraction": line.fraction()})
        })
        .collect();
    serde_json::json!({
        "tokens": spend.tokens,
        "totalTokens": spend.tokens.total(),
        "costUsd": spend.cost_usd,
        "costIsEstimate": true,
        "activeSecs": active_secs,
        "incomplete": spend.incomplete,
        "budgets": budgets,
        "summary": summary(spend, active_secs),
    })
}

/// "1h 02m", "3m 05s", "12s".
pub fn human_duration(seconds: i64) -> String {
    let seconds = seconds.max(0);
    match (seconds / 3600, (seconds % 3600) / 60, seconds % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m {s:02}s"),
        (h, m, _) => format!("{h}h {m:02}m"),
    }
}

/// `12345678` → `12,345,678`.
pub fn format_tokens(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (index, c) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `$0.84`, `$12.50`, `$0.0031` (small amounts keep two significant digits).
pub fn format_usd(value: f64) -> String {
    if value > 0.0 && value < 0.01 {
        format!("${value:.4}")
    } else {
        format!("${value:.2}")
    }
}

/// `90s`, `30m`, `2h`, `1h30m`, `1d`, or plain seconds.
pub fn parse_duration(text: &str) -> anyhow::Result<u64> {
    let text = text.trim();
    if text.is_empty() {
        bail!("empty duration");
    }
    if let Ok(seconds) = text.parse::<u64>() {
        return Ok(seconds);
    }
    let mut total: u64 = 0;
    let mut number = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            ' ' if number.is_empty() => continue,
            _ => bail!("{text:?} is not a duration: use e.g. 90s, 30m, 2h, 1h30m or 1d"),
        };
        let value: u64 = number
            .parse()
            .with_context(|| format!("{text:?} is not a duration: a unit needs a number"))?;
        total += value * unit;
        number.clear();
    }
    if !number.is_empty() {
        bail!("{text:?} is not a duration: the last number has no unit (s, m, h or d)");
    }
    Ok(total)
}

/// One model family's prices, USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    /// Writing the prompt cache; default 1.25 × input (the 5-minute cache).
    #[serde(default)]
    pub cache_write: Option<f64>,
    /// Reading the prompt cache; default 0.1 × input.
    #[serde(default)]
    pub cache_read: Option<f64>,
}

impl Price {
    const fn of(input: f64, output: f64) -> Price {
        Price {
            input,
            output,
            cache_write: None,
            cache_read: None,
        }
    }

    /// USD for `tokens` at these prices.
    pub fn cost(&self, tokens: &Tokens) -> f64 {
        let per_token = |per_million: f64| per_million / 1_000_000.0;
        tokens.input as f64 * per_token(self.input)
            + tokens.output as f64 * per_token(self.output)
            + tokens.cache_creation as f64
                * per_token(self.cache_write.unwrap_or(self.input * 1.25))
            + tokens.cache_read as f64 * per_token(self.cache_read.unwrap_or(self.input * 0.1))
    }
}

/// The built-in table: list prices of the Claude model families when this
/// was written. A key matches a model whose name contains it; the longest
/// matching key wins; `default` prices every other model.
pub const DEFAULT_PRICES: &[(&str, Price)] = &[
    ("opus-4-1", Price::of(15.0, 75.0)),
    ("opus-4-2025", Price::of(15.0, 75.0)),
    ("3-opus", Price::of(15.0, 75.0)),
    ("opus", Price::of(5.0, 25.0)),
    ("sonnet", Price::of(3.0, 15.0)),
    ("3-5-haiku", Price::of(0.8, 4.0)),
    ("haiku", Price::of(1.0, 5.0)),
    ("default", Price::of(3.0, 15.0)),
];

/// The `budget` section of `.claude/ralph-hooks.json`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct BudgetConfig {
    /// Model-name fragment → price; merged over [`DEFAULT_PRICES`].
    #[serde(default)]
    pub prices: BTreeMap<String, Price>,
}

/// The prices in force: the built-in table with the config's entries over it.
#[derive(Debug, Clone)]
pub struct PriceTable {
    entries: BTreeMap<String, Price>,
}

impl Default for PriceTable {
    fn default() -> PriceTable {
        PriceTable::new(&BudgetConfig::default())
    }
}

impl PriceTable {
    pub fn new(config: &BudgetConfig) -> PriceTable {
        let mut entries: BTreeMap<String, Price> = DEFAULT_PRICES
            .iter()
            .map(|(key, price)| (key.to_string(), *price))
            .collect();
        for (key, price) in &config.prices {
            entries.insert(key.to_ascii_lowercase(), *price);
        }
        PriceTable { entries }
    }

    /// The price for a model name: the longest key it contains, else `default`.
    pub fn price_for(&self, model: &str) -> Price {
        let model = model.to_ascii_lowercase();
        self.entries
            .iter()
            .filter(|(key, _)| key.as_str() != "default" && model.contains(key.as_str()))
            .max_by_key(|(key, _)| key.len())
            .or_else(|| self.entries.get_key_value("default"))
            .map(|(_, price)| *price)
            .unwrap_or(Price::of(3.0, 15.0))
    }

    /// The estimated cost of tokens counted per model.
    pub fn cost(&self, by_model: &BTreeMap<String, Tokens>) -> f64 {
        by_model
            .iter()
            .map(|(model, tokens)| self.price_for(model).cost(tokens))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s").unwrap(), 90);
        assert_eq!(parse_duration("30m").unwrap(), 1800);
        assert_eq!(parse_duration("1h30m").unwrap(), 5400);
        assert_eq!(parse_duration("2h").unwrap(), 7200);
        assert_eq!(parse_duration("1d").unwrap(), 86_400);
        assert_eq!(parse_duration("45").unwrap(), 45);
        assert!(parse_duration("1h30").is_err());
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn longest_key_wins_and_config_overrides() {
        let table = PriceTable::default();
        assert_eq!(table.price_for("claude-opus-4-1-20250805").input, 15.0);
        assert_eq!(table.price_for("claude-opus-4-8").input, 5.0);
        assert_eq!(table.price_for("claude-sonnet-5").input, 3.0);
        assert_eq!(table.price_for("something-new").input, 3.0);
        let config: BudgetConfig =
            serde_json::from_str(r#"{"prices": {"sonnet": {"input": 6, "output": 30}}}"#).unwrap();
        let table = PriceTable::new(&config);
        assert_eq!(table.price_for("claude-sonnet-5").output, 30.0);
    }

    #[test]
    fn cost_counts_cache_at_its_own_rate() {
        let price = Price::of(3.0, 15.0);
        let tokens = Tokens {
            input: 1_000_000,
            output: 1_000_000,
            cache_creation: 1_000_000,
            cache_read: 1_000_000,
        };
        let cost = price.cost(&tokens);
        assert!((cost - (3.0 + 15.0 + 3.75 + 0.3)).abs() < 1e-9, "{cost}");
    }

    #[test]
    fn lines_warn_and_exhaust() {
        let budget = Budget {
            max_tokens: Some(1000),
            max_secs: Some(600),
            ..Budget::default()
        };
        let spend = Spend {
            tokens: Tokens {
                input: 850,
                ..Tokens::default()
            },
            ..Spend::default()
        };
        let lines = lines(&budget, &spend, 60);
        assert_eq!(lines.len(), 2);
        let near = newly_near(&lines, &BTreeSet::new());
        assert_eq!(near.len(), 1);
        assert_eq!(near[0].kind, Kind::Tokens);
        assert!(exhausted(&lines).is_none());
        let text = prompt_lines(&lines);
        assert!(
            text.contains("token budget: 850 of 1,000 used (150 left, 85 %)"),
            "{text}"
        );
        assert!(text.contains("WARNING: 85 % of the token budget"), "{text}");
        let warned: BTreeSet<String> = ["tokens".to_string()].into();
        assert!(newly_near(&lines, &warned).is_empty());
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(format_tokens(0), "0");
        assert_eq!(format_tokens(999), "999");
        assert_eq!(format_tokens(1000), "1,000");
        assert_eq!(format_tokens(12_345_678), "12,345,678");
        assert_eq!(format_usd(0.8412), "$0.84");
        assert_eq!(format_usd(0.0031), "$0.0031");
    }
}
