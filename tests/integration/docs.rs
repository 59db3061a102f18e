//! Tests that the README and the guide in `docs/` cannot drift from the binary: every
//! `barrage …` command line in their shell blocks goes through the real parser, and every
//! relative link leads to a file (and, into Markdown, to a heading) that exists.
//!
//! The parser is the binary's own definition ([`crate::args`], included by path).

use crate::args::Cli;
use clap::Parser;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// What the docs write where a reader puts their own value, or a shell computes one, and
/// what the test puts instead: each a value the flag it stands for accepts. `FILE` in
/// `--form name=@FILE` is read as the flags are parsed, so it must exist.
/// clap's error in one line, as barrage prints it.
fn first_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default().trim_start_matches("error: ").to_string()
}

fn placeholders() -> Vec<(&'static str, String)> {
    let a_file = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    vec![
        ("$URL", "http://127.0.0.1:8080/".into()),
        ("$T", "2030-01-01T00:00:00Z".into()),
        // `start=$(( $(date +%s) + 30 ))`: Unix seconds.
        ("$start", "1900000000".into()),
        // Shard numbers: pdsh's from the host name, Slurm's and GNU parallel's own.
        (r"\$(( \$(hostname -s | tr -dc 0-9) - 1 ))", "0".into()),
        ("$SLURM_PROCID", "0".into()),
        ("$SLURM_NTASKS", "3".into()),
        ("$SLURM_ARRAY_TASK_ID", "0".into()),
        ("$SLURM_ARRAY_TASK_COUNT", "3".into()),
        // The collector's host, expanded where the line is typed.
        ("$(hostname -f)", "ctl.example".into()),
        ("{}", "0".into()),
        ("@cover.jpg", format!("@{a_file}")),
    ]
}

/// `line` with each placeholder replaced where it is not the start of a longer name
/// (`$T` but not `$TMPDIR`).
fn substitute(line: &str) -> String {
    let mut line = line.to_string();
    for (placeholder, value) in placeholders() {
        let mut out = String::with_capacity(line.len());
        let mut rest = line.as_str();
        while let Some(at) = rest.find(placeholder) {
            let after = &rest[at + placeholder.len()..];
            let longer = after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
            out.push_str(&rest[..at]);
            out.push_str(if longer { placeholder } else { &value });
            rest = after;
        }
        out.push_str(rest);
        line = out;
    }
    line
}

/// The repository's root, where README.md is.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `path` as a failure names it: from the repository's root.
fn shown(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).display().to_string()
}

/// README.md and every Markdown file under docs/.
fn markdown_files() -> Vec<PathBuf> {
    let root = root();
    let mut files = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// A line of a Markdown file, numbered from 1, and whether it is inside a fenced block, with
/// the block's language.
struct Line<'a> {
    number: usize,
    text: &'a str,
    block: Option<&'a str>,
}

fn lines(markdown: &str) -> Vec<Line<'_>> {
    let mut block = None;
    let mut out = Vec::new();
    for (i, text) in markdown.lines().enumerate() {
        if let Some(info) = text.trim_start().strip_prefix("```") {
            block = if block.is_some() { None } else { Some(info.trim()) };
            continue;
        }
        out.push(Line { number: i + 1, text, block });
    }
    out
}

/// The shell command lines of the file's shell blocks (no language, `sh`, `bash`, `shell`,
/// `console`), `\` continuations joined, each with the number of its first line.
fn shell_lines(markdown: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut open = false;
    for line in lines(markdown) {
        let Some(block) = line.block else {
            open = false;
            continue;
        };
        if !matches!(block, "" | "sh" | "bash" | "shell" | "console") {
            continue;
        }
        let text = line.text.trim();
        let text = text.strip_prefix("$ ").unwrap_or(text);
        let (text, continued) = match text.strip_suffix('\\') {
            Some(t) => (t, true),
            None => (text, false),
        };
        match out.last_mut() {
            Some((_, joined)) if open => {
                joined.push(' ');
                joined.push_str(text);
            }
            _ => out.push((line.number, text.to_string())),
        }
        open = continued;
    }
    out
}

/// The command lines in the cells of the file's tables (the map from the classic tools): a
/// code span that starts with `barrage` and has arguments (`barrage testbed` alone names the
/// subcommand), its `…` ("and the rest of your flags") dropped.
fn table_lines(markdown: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for line in lines(markdown).iter().filter(|l| l.block.is_none() && l.text.starts_with('|')) {
        let text = line.text.replace("\\|", "|");
        for span in text.split('`').skip(1).step_by(2).filter(|s| s.starts_with("barrage ")) {
            let words: Vec<&str> = span.split(' ').filter(|w| *w != "…").collect();
            if words.len() < 3 {
                continue;
            }
            out.push((line.number, words.join(" ")));
        }
    }
    out
}

/// The argument lists of the `barrage` invocations on a shell line: each simple command of
/// it (split at `|`, `;`, `&&`, `||`, `&`, redirections dropped) that starts with `barrage`
/// (after `VAR=value` assignments, `exec`, GNU parallel's options, or as
/// `cargo run --release --`), and any
/// argument that is itself such a command (`--at 3s 'barrage testbed stop NAME'`).
fn invocations(line: &str) -> Result<Vec<Vec<String>>, String> {
    let words = shlex::split(&substitute(line)).ok_or("unbalanced quotes")?;
    let mut found = Vec::new();
    for command in simple_commands(words) {
        for word in &command {
            if word.starts_with("barrage ") || word.starts_with("exec barrage ") {
                found.extend(invocations(word)?);
            }
        }
        let mut words = command.as_slice();
        while let [first, rest @ ..] = words {
            if first == "exec" || is_assignment(first) {
                words = rest;
            } else {
                break;
            }
        }
        if let [cargo, run, rest @ ..] = words {
            if cargo == "cargo" && run == "run" {
                let at = rest.iter().position(|w| w == "--").ok_or("cargo run without --")?;
                let mut args = vec!["barrage".to_string()];
                args.extend(rest[at + 1..].iter().cloned());
                found.push(args);
                continue;
            }
        }
        if words.first().is_some_and(|w| w == "parallel") {
            // GNU parallel: the command is its first word `barrage`, its arguments end at `:::`.
            if let Some(at) = words.iter().position(|w| w == "barrage") {
                let end = words.iter().position(|w| w == ":::").unwrap_or(words.len()).max(at);
                words = &words[at..end];
            }
        }
        if words.first().is_some_and(|w| w == "barrage") {
            found.push(words.to_vec());
        }
    }
    Ok(found)
}

/// The words split into simple commands at the shell's operators, redirections left out.
fn simple_commands(words: Vec<String>) -> Vec<Vec<String>> {
    let mut commands = vec![Vec::new()];
    let mut skip_next = false;
    for word in words {
        if skip_next {
            skip_next = false;
            continue;
        }
        if matches!(word.as_str(), "|" | "||" | "&&" | ";" | "&") {
            commands.push(Vec::new());
            continue;
        }
        let redirect = word.trim_start_matches(|c: char| c.is_ascii_digit() || c == '&');
        if redirect.starts_with('>') || redirect.starts_with('<') {
            // `> file` takes the next word; `>file` and `2>&1` are one.
            skip_next = redirect.trim_start_matches(['>', '<']).is_empty() && !word.ends_with("&1");
            continue;
        }
        match word.strip_suffix(';') {
            Some(last) => {
                commands.last_mut().expect("one command at least").push(last.to_string());
                commands.push(Vec::new());
            }
            None => commands.last_mut().expect("one command at least").push(word),
        }
    }
    commands.retain(|c| !c.is_empty());
    commands
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    })
}

#[test]
fn every_command_line_in_the_docs_parses() {
    let mut failures = Vec::new();
    let mut parsed = 0;
    for file in markdown_files() {
        let markdown = std::fs::read_to_string(&file).expect("a Markdown file");
        for (number, line) in shell_lines(&markdown).into_iter().chain(table_lines(&markdown)) {
            let at = format!("{}:{number}", shown(&file));
            match invocations(&line) {
                Err(e) => failures.push(format!("{at}: {e}: {line}")),
                Ok(commands) => {
                    for args in commands {
                        parsed += 1;
                        if let Err(e) = Cli::try_parse_from(&args) {
                            failures.push(format!("{at}: {}: {line}", first_line(&e)));
                        }
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} command line(s) the parser refuses:\n{}", failures.len(), failures.join("\n"));
    // There are some 80: finding few means the extraction broke, not the docs.
    assert!(parsed > 60, "only {parsed} command lines found in the docs");
}

#[test]
fn command_lines_are_found_as_a_shell_reads_them() {
    let cases: &[(&str, &[&[&str]])] = &[
        ("barrage run -c 1 URL  # a comment", &[&["barrage", "run", "-c", "1", "URL"]]),
        (
            "barrage run --rate 100 -o r.brg $URL; barrage report r.brg",
            &[
                &["barrage", "run", "--rate", "100", "-o", "r.brg", "http://127.0.0.1:8080/"],
                &["barrage", "report", "r.brg"],
            ],
        ),
        ("barrage run --format json URL > run.json 2>&1 | jq .", &[&["barrage", "run", "--format", "json", "URL"]]),
        ("barrage serve --tls &", &[&["barrage", "serve", "--tls"]]),
        ("BARRAGE_X=1 exec barrage demo", &[&["barrage", "demo"]]),
        ("cargo run --release -- demo", &[&["barrage", "demo"]]),
        (
            "barrage run --at 3s 'barrage testbed stop m-2' URL",
            &[
                &["barrage", "testbed", "stop", "m-2"],
                &["barrage", "run", "--at", "3s", "barrage testbed stop m-2", "URL"],
            ],
        ),
        ("kubectl logs job/barrage-merge", &[]),
        ("parallel -S 1/a --cleanup barrage report 's-{}.brg' ::: 0 1", &[&["barrage", "report", "s-0.brg"]]),
        ("echo $T $TMPDIR", &[]),
        ("scripts/test.sh", &[]),
    ];
    for (line, want) in cases {
        let got = invocations(line).unwrap();
        let want: Vec<Vec<String>> = want.iter().map(|c| c.iter().map(|w| w.to_string()).collect()).collect();
        assert_eq!(got, want, "{line}");
    }
    let block = "text\n```sh\nbarrage run \\\n  -c 2 URL\n$ barrage demo\n```\n```toml\nbarrage = 1\n```\n";
    let table = "| `ab -k $URL` | `barrage run -k …` (`barrage` x) |\n| `barrage testbed` |\n`barrage run` prose\n";
    assert_eq!(table_lines(table), vec![(1, "barrage run -k".to_string())]);
    assert_eq!(substitute("$T $TMPDIR $T"), "2030-01-01T00:00:00Z $TMPDIR 2030-01-01T00:00:00Z");
    assert_eq!(shell_lines(block), vec![(3, "barrage run  -c 2 URL".to_string()), (5, "barrage demo".to_string())]);
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens, and a
/// heading seen before gets `-1`, `-2`…
fn anchors(markdown: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    for line in lines(markdown).iter().filter(|l| l.block.is_none()) {
        let Some(heading) = line.text.strip_prefix('#') else { continue };
        let heading = heading.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let slug: String = heading
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut unique = slug.clone();
        let mut n = 0;
        while !seen.insert(unique.clone()) {
            n += 1;
            unique = format!("{slug}-{n}");
        }
    }
    seen
}

/// The targets of the inline links `[text](target)` on a line, outside code spans.
fn link_targets(line: &str) -> Vec<&str> {
    let mut targets = Vec::new();
    // Odd pieces between backticks are code spans.
    for (i, piece) in line.split('`').enumerate() {
        if i % 2 == 1 {
            continue;
        }
        let mut rest = piece;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find(')').unwrap_or(after.len());
            targets.push(after[..end].split_whitespace().next().unwrap_or(""));
            rest = &after[end..];
        }
    }
    targets
}

#[test]
fn every_relative_link_in_the_docs_leads_somewhere() {
    let mut failures = Vec::new();
    for file in markdown_files() {
        let markdown = std::fs::read_to_string(&file).expect("a Markdown file");
        for line in lines(&markdown).iter().filter(|l| l.block.is_none()) {
            for target in link_targets(line.text) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                if let Err(e) = check_link(&file, target) {
                    failures.push(format!("{}:{}: ({target}): {e}", shown(&file), line.number));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} broken link(s):\n{}", failures.len(), failures.join("\n"));
}

/// Whether `target`, written in `file`, names a file or directory that exists, and, with an
/// `#anchor` into Markdown, one of its headings.
fn check_link(file: &Path, target: &str) -> Result<(), String> {
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let linked = if path.is_empty() { file.to_path_buf() } else { file.parent().expect("a directory").join(path) };
    if !linked.exists() {
        return Err(format!("no such file: {}", shown(&linked)));
    }
    match anchor {
        Some(anchor) if linked.extension().is_some_and(|e| e == "md") => {
            let markdown = std::fs::read_to_string(&linked).map_err(|e| e.to_string())?;
            if anchors(&markdown).contains(anchor) {
                Ok(())
            } else {
                Err(format!("no heading #{anchor} in {}", shown(&linked)))
            }
        }
        _ => Ok(()),
    }
}

#[test]
fn anchors_are_githubs() {
    let markdown = "# A title\n## Multiplexing: HTTP/2 and HTTP/3 streams (`--streams`)\n```\n# not a heading\n```\n## `barrage compare A B [C …]`\n### A title\n#hashtag\n";
    let want = ["a-title", "multiplexing-http2-and-http3-streams---streams", "barrage-compare-a-b-c-", "a-title-1"];
    assert_eq!(anchors(markdown), want.iter().map(|s| s.to_string()).collect());
    assert_eq!(link_targets("see [a](b.md#c) and `[x](y)`, [d](e \"title\")"), vec!["b.md#c", "e"]);
}

/// The simulation the README's "Beyond two cores" quotes runs as shipped, and gives its
/// known answer: without hypervisor exits and with a 5 µs timer, a 50 µs window sends every
/// request within 100 µs, on about half a core.
#[test]
fn the_cores_simulation_runs_as_shipped() {
    let python = std::process::Command::new("python3").arg("--version").output().is_ok_and(|o| o.status.success());
    if !crate::util::require("python3", python) {
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/sim_cores.py");
    let out = std::process::Command::new("python3").arg(&script).args(["--seconds", "0.2"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let row = text
        .lines()
        .find(|l| l.starts_with("| no hypervisor exits' | 5 µs | 14 | 71,429 | 50 |"))
        .unwrap_or_else(|| panic!("{text}"));
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    assert_eq!(cells[6], "100.00%", "{row}");
    let busy: u32 = cells[8].trim_end_matches('%').parse().unwrap();
    assert!((45..=65).contains(&busy), "{row}");
}
