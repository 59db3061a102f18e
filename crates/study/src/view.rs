//! What a results file says was run: a serializable view of the [`Plan`] that ran, in one
//! shape for every mode (the header's `settings.plan`).
//!
//! Header values and URL credentials are left out: a results file is shared, and a header
//! may carry a credential. Header names are kept, so the file still says what was sent.

use barrage_engine::{Load, Pacer, Plan, Target};
use serde_json::{json, Value};

/// The plan as JSON: targets, load, limits, connection and request options.
pub fn plan_view(p: &Plan) -> Value {
    json!({
        "targets": p.targets.iter().map(target_view).collect::<Vec<_>>(),
        "load": load_view(&p.load),
        "duration_s": p.duration.map(|d| d.as_secs_f64()),
        "requests": p.requests,
        "keepalive": p.keepalive,
        "http2": p.http2,
        "insecure": p.tls.insecure,
        "cacert": p.tls.cacert.as_ref().map(|c| c.display().to_string()),
        "timeout_s": p.timeout.as_secs_f64(),
        "connect_timeout_s": p.connect_timeout.as_secs_f64(),
        "threads": p.threads,
        "pick": format!("{:?}", p.pick),
        "hit_ratio": p.hit_ratio,
        "objects": p.objects,
        "seed": p.seed,
        "retry": p.retry.as_ref().map(|r| json!({
            "max_retries": r.max_retries,
            "backoff_min_s": r.backoff_min.as_secs_f64(),
            "backoff_max_s": r.backoff_max.as_secs_f64(),
            "on": format!("{:?}", r.on),
        })),
        "backend_headers": p.backend_headers.iter().map(|h| h.as_str()).collect::<Vec<_>>(),
    })
}

fn target_view(t: &Target) -> Value {
    let url = match &t.id_template {
        // The template as given, not with {id} filled by 0.
        Some(tpl) => {
            let authority = t.url.authority().map_or("", |a| a.as_str());
            let host = authority.rsplit('@').next().unwrap_or(authority);
            format!("{}://{host}{}{{id}}{}", t.url.scheme_str().unwrap_or("http"), tpl.prefix, tpl.suffix)
        }
        None => without_userinfo(&t.url),
    };
    json!({
        "method": t.method.as_str(),
        "url": url,
        "name": t.name,
        "headers": t.headers.keys().map(|k| k.as_str()).collect::<Vec<_>>(),
        "body_bytes": t.body.len(),
        "body_unique_bytes": t.body_unique_len,
    })
}

/// The URL without `user:password@`.
fn without_userinfo(url: &http::Uri) -> String {
    let text = url.to_string();
    match url.authority().map(|a| a.as_str()) {
        Some(a) if a.contains('@') => text.replacen(a, a.rsplit('@').next().unwrap_or(a), 1),
        _ => text,
    }
}

fn load_view(load: &Load) -> Value {
    match load {
        Load::Open { pacer, max_in_flight } => {
            let pacer = match pacer {
                Pacer::Constant { rate } => json!({ "constant_per_sec": rate }),
                Pacer::Ramp { from, to, over } => json!({ "ramp_per_sec": [from, to], "over_s": over.as_secs_f64() }),
                Pacer::Steps { rates, step } => json!({ "steps_per_sec": rates, "step_s": step.as_secs_f64() }),
            };
            json!({ "open": { "pacer": pacer, "max_in_flight": max_in_flight } })
        }
        Load::Closed { concurrency, think_time } => {
            json!({ "closed": { "workers": concurrency, "think_time_s": think_time.as_secs_f64() } })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_names_the_load_and_leaves_secrets_out() {
        let mut t = Target::new(http::Method::GET, "http://user:secret@127.0.0.1:8080/obj/{id}?v=1").unwrap();
        t.headers.insert(http::header::AUTHORIZATION, http::HeaderValue::from_static("Bearer hunter2"));
        let mut p = Plan::new(vec![t], Load::Closed { concurrency: 8, think_time: Default::default() });
        p.objects = Some(10);
        let v = plan_view(&p);
        let text = v.to_string();
        assert!(!text.contains("secret") && !text.contains("hunter2"), "{text}");
        assert_eq!(v["targets"][0]["url"], "http://127.0.0.1:8080/obj/{id}?v=1");
        assert_eq!(v["targets"][0]["headers"][0], "authorization");
        assert_eq!(v["load"]["closed"]["workers"], 8);
        let t = Target::new(http::Method::GET, "http://u:p@127.0.0.1:8080/a").unwrap();
        assert_eq!(without_userinfo(&t.url), "http://127.0.0.1:8080/a");
    }
}
