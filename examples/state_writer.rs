//! Test helper for the crash-safety test: rewrites one large document through
//! the state store in a tight loop, so a kill at any moment lands mid-write.
//!
//! Usage: state_writer <state-root> — writes `doc.json` with a growing `n`.

use ralph_hooks::state::{Store, Versioned};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Doc {
    n: u64,
    payload: String,
}

impl Versioned for Doc {
    const VERSION: u64 = 1;
}

fn main() -> anyhow::Result<()> {
    let root = std::env::args()
        .nth(1)
        .ok_or_else(|| anyhow::anyhow!("usage: state_writer <state-root>"))?;
    let store = Store::new(root.into());
    let payload = "y".repeat(256 * 1024);
    loop {
        let locked = store.lock("doc.json")?;
        let n = locked.load_json::<Doc>()?.map_or(0, |doc| doc.n + 1);
        locked.save_json(&Doc {
            n,
            payload: payload.clone(),
        })?;
    }
}
