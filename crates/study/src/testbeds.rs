//! A case's testbed as the experiment file's `testbed…` keys ask for it, checked before
//! anything runs: the keys' values parsed, the options checked with the file's names for
//! them, and the servers it will have planned with stand-in addresses (it starts later).
//! Apart from running the cases, which brings the testbed up.

use crate::experiment::Environment;
use barrage_plan::experiment::TestbedSetting;
use barrage_testbed::{Balance, ServerSpec};
use std::path::Path;

impl Environment {
    /// The testbed of a case's `testbed…` keys, checked; a complaint names the key.
    pub fn from_setting(t: &TestbedSetting) -> Result<Environment, String> {
        let env = Environment {
            topology: t.topology.parse().map_err(|m: String| {
                format!(
                    "testbed = {:?}: {m} (a case's testbed is a topology the experiment brings up, not the directory of run's --testbed)",
                    t.topology
                )
            })?,
            tls: t.tls,
            backends: t.backends,
            balance: match &t.balance {
                Some(b) => b.parse().map_err(|m: String| format!("testbed-balance = {b:?}: {m}"))?,
                None => Balance::RoundRobin,
            },
            weights: t.weights.clone(),
            shapes: t.shapes.clone(),
            memory: t.memory,
            eviction: match &t.eviction {
                Some(e) => Some(e.parse().map_err(|m: String| format!("testbed-eviction = {e:?}: {m}"))?),
                None => None,
            },
        };
        // Weights for the number of origins, shapes that parse and name origins it has.
        env.options(Path::new("barrage")).check().map_err(|e| {
            let e = e.to_string().replace("--weights", "testbed-weights").replace("--shape", "testbed-shape");
            e.replace("--backends", "testbed-backends")
        })?;
        Ok(env)
    }
}

/// The servers `testbed` will have (none without one), with stand-in addresses: a case's
/// flags are checked before its testbed starts.
pub fn planned(testbed: Option<&Environment>) -> std::io::Result<Vec<ServerSpec>> {
    match testbed {
        Some(env) => barrage_testbed::plan(&env.options(Path::new("barrage")), Path::new("/nonexistent")),
        None => Ok(Vec::new()),
    }
}

/// `testbed-purge = true` needs a cache among the `specs` of `testbed` to purge.
pub fn check_purge(testbed: Option<&Environment>, specs: &[ServerSpec], purge: bool) -> Result<(), String> {
    if purge && !specs.iter().any(|s| s.kind.is_cache()) {
        let topology = testbed.map_or("", |env| env.topology.name());
        return Err(format!(
            "testbed-purge = true: the {topology} testbed has no cache to purge (varnish, squid, nginx-cache, all, redis and memcached have)"
        ));
    }
    Ok(())
}
