//! The run's flags as the plan crate's plain values ([`LoadFlags`], [`ProtocolFlags`],
//! [`KvFlags`], [`RequestFlags`]…): clap's types stay on this side, and what the flags mean is decided there.

use super::{EmitArgs, LiveArgs, MeasureArgs, OutputArgs, RunArgs};
use barrage_metrics::secrets::Redaction;
use barrage_plan::kv_flags::KvFlags;
use barrage_plan::request_flags::RequestFlags;
use barrage_plan::run_flags::ScenarioFlags;
use barrage_plan::units::LoadFlags;
use barrage_plan::{ProtocolFlags, ResponseRules};

impl RunArgs {
    /// The flags that meet `--scenario`.
    pub fn scenario_flags(&self) -> ScenarioFlags {
        let r = &self.request;
        ScenarioFlags {
            scenario: r.scenario.clone(),
            vars: r.vars.clone(),
            method: r.method.is_some(),
            pick: r.pick.is_some(),
            key_pattern: self.kv.key_pattern.is_some(),
            requests: self.load.requests,
        }
    }

    /// What `--rate`, `-c` and their companions ask for. A study that sets the load itself
    /// (`sweep`, `capacity`) builds its base plan from its own.
    pub fn load_flags(&self) -> LoadFlags {
        let l = &self.load;
        LoadFlags {
            rate: l.rate.clone(),
            step: l.step.map(|s| s.0),
            concurrency: l.concurrency.clone(),
            think_time: l.think_time.map(|t| t.0),
            connections: self.conn.connections,
            max_in_flight: l.max_in_flight,
            duration: l.duration.map(|d| d.0),
        }
    }

    /// The flags that choose the protocol.
    pub fn protocol_flags(&self) -> ProtocolFlags {
        let c = &self.conn;
        ProtocolFlags {
            http2: c.http2,
            http3: c.http3,
            streams: c.streams,
            rounds: c.rounds,
            no_keepalive: c.no_keepalive,
        }
    }

    /// What every request is: the targets, method, body and headers the flags give.
    pub fn request_flags(&self) -> RequestFlags {
        let r = &self.request;
        RequestFlags {
            urls: self.target.urls.clone(),
            targets_file: r.targets.clone(),
            urls_file: r.urls_file.clone(),
            method: r.method.clone(),
            headers: r.headers.clone(),
            body: r.body.clone(),
            body_size: r.body_size,
            body_pattern: r.body_pattern.clone(),
            body_unique: r.body_unique,
            form: r.form.clone(),
            seed: r.seed,
        }
    }

    /// The key-value flags, and the first HTTP flag given, which a key-value run refuses.
    pub fn kv_flags(&self) -> KvFlags {
        let (k, r) = (&self.kv, &self.request);
        let (data_size_flag, data_size) = [
            ("--data-size", &k.data_size),
            ("--data-size-range", &k.data_size_range),
            ("--data-size-list", &k.data_size_list),
        ]
        .into_iter()
        .find_map(|(flag, size)| Some((flag, size.clone()?)))
        .unzip();
        let http_only = [
            (r.targets.is_some(), "--targets"),
            (r.urls_file.is_some(), "--urls"),
            (r.body.is_some() || r.body_size.is_some() || !r.form.is_empty(), "--body"),
            (r.hit_ratio.is_some(), "--hit-ratio"),
            (!r.headers.is_empty(), "-H"),
            (r.method.is_some(), "-X"),
            (self.conn.no_keepalive, "--no-keepalive"),
        ];
        KvFlags {
            urls: self.target.urls.clone(),
            servers: k.servers.clone(),
            protocol: k.protocol,
            ratio: k.ratio,
            key_prefix: k.key_prefix.clone(),
            key_minimum: k.key_minimum,
            key_maximum: k.key_maximum,
            data_size,
            data_size_flag: data_size_flag.unwrap_or("--data-size"),
            pipeline: k.pipeline,
            commands: k.commands.clone(),
            distribution: k.distribution.clone(),
            objects: r.objects,
            scenario: r.scenario.is_some(),
            http_flag: http_only.iter().find(|(given, _)| *given).map(|(_, flag)| *flag),
        }
    }
}

impl MeasureArgs {
    /// How responses are read: `--cache-rule`, `--backend-header` or the built-in headers.
    pub fn responses(&self) -> ResponseRules {
        ResponseRules {
            cache: barrage_plan::CacheRules::new(self.cache_rules.clone()),
            backend_headers: if self.backend_headers.is_empty() {
                barrage_plan::default_backend_headers()
            } else {
                self.backend_headers.clone()
            },
        }
    }
}

impl OutputArgs {
    /// How `--no-redact` and `--redact-header` keep secrets out of the run's outputs.
    pub fn redaction(&self) -> Redaction {
        if self.no_redact {
            Redaction::off()
        } else {
            Redaction::with_names(&self.redact_headers)
        }
    }
}

impl EmitArgs {
    /// The files `--html`, `--xlsx` and `--csv-dir` ask for beside standard output.
    pub fn files(&self) -> barrage_report::output::Files {
        let (html, xlsx, csv_dir) = (self.html.clone(), self.xlsx.clone(), self.csv_dir.clone());
        barrage_report::output::Files { html, xlsx, csv_dir }
    }
}

impl LiveArgs {
    /// The live views `--tui` and `--metrics-addr` ask for.
    pub fn options(&self) -> barrage_live::LiveOptions {
        barrage_live::LiveOptions { tui: self.tui, metrics_addr: self.metrics_addr }
    }
}
