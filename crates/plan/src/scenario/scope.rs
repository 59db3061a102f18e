//! What `{{name}}` may read in a step: the file's constants (with `--var` over them), the
//! built-ins, a feeder's columns and earlier captures; and the template a text compiles to.

use super::document::{check_name, closest, hint, list, Doc};
use super::Res;
use crate::flow::{Feeder, Name, Template, Var};
use indexmap::IndexMap;
use toml::Spanned;

/// Names `{{...}}` gives another meaning.
pub(super) fn reserved(name: &str) -> bool {
    matches!(name, "seq" | "uuid") || name.starts_with("row.") || name.starts_with("flow.")
}

/// A `--var` that neither names a `[vars]` entry nor stands in any `{{...}}` of the file
/// would change nothing: a typo, refused with the names that would do something.
pub(super) fn unused_vars(
    doc: &Doc,
    declared: &IndexMap<String, Spanned<toml::Value>>,
    given: &[(String, String)],
) -> Res<()> {
    let used = names_in(doc.text);
    for (name, _) in given {
        if !declared.contains_key(name) && !used.contains(&name.as_str()) {
            let known = declared.keys().map(String::as_str).chain(used.iter().copied().filter(|n| !reserved(n)));
            let mut known: Vec<&str> = known.collect();
            known.sort_unstable();
            known.dedup();
            // Not `--var NAME: …`: a secret-like NAME would redact the rest of the line.
            let what = format!("--var {name} is read by no {{{{{name}}}}} of the scenario{}", hint(name, known));
            return Err(doc.whole(what));
        }
    }
    Ok(())
}

/// `[vars]` with `--var` over them.
pub(super) fn constants(
    doc: &Doc,
    raw: &IndexMap<String, Spanned<toml::Value>>,
    given: &[(String, String)],
) -> Res<IndexMap<String, String>> {
    let mut vars = IndexMap::new();
    for (name, value) in raw {
        let key = format!("vars.{name}");
        check_name(doc, value.span(), &key, name)?;
        if reserved(name) {
            return Err(doc.fail(value.span(), &key, format!("'{name}' is a built-in name; choose another")));
        }
        let text = match value.get_ref() {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            other => return Err(doc.fail(value.span(), &key, format!("{other} is not text or a number"))),
        };
        vars.insert(name.clone(), text);
    }
    for (name, value) in given {
        if reserved(name)
            || name.is_empty()
            || name.contains(|c: char| !c.is_ascii_alphanumeric() && !"_.-".contains(c))
        {
            return Err(doc.whole(format!(
                "--var {name}: not a variable name (letters, digits, '_', '.' and '-', not a built-in)"
            )));
        }
        vars.insert(name.clone(), value.clone());
    }
    Ok(vars)
}

/// The built-in variables, as listed in messages.
pub(super) const BUILTINS: [&str; 6] = ["flow.iteration", "flow.worker", "flow.id", "seq", "uuid", "random:N"];

pub(super) fn builtin(name: &str) -> Result<Option<Var>, String> {
    Ok(Some(match name {
        "flow.iteration" => Var::Iteration,
        "flow.worker" => Var::Worker,
        "flow.id" => Var::FlowId,
        "seq" => Var::Seq,
        "uuid" => Var::Uuid,
        _ => match name.strip_prefix("random:") {
            None => return Ok(None),
            Some(n) => match n.trim().parse::<u64>() {
                Ok(n) if n >= 1 => Var::Random(n),
                _ => {
                    return Err(format!(
                        "'{{{{{name}}}}}': N of {{{{random:N}}}} is a whole number from 1, e.g. {{{{random:1000}}}}"
                    ))
                }
            },
        },
    }))
}

/// What `{{name}}` can read in one step: the file's constants, the flow's feeder, the
/// built-ins and what earlier steps capture.
pub(super) struct Scope<'a> {
    pub(super) vars: &'a IndexMap<String, String>,
    pub(super) feeder: Option<&'a Feeder>,
    pub(super) flow: &'a str,
    pub(super) step: &'a str,
    /// Captured by the steps before this one: name → slot.
    pub(super) captured: &'a IndexMap<String, usize>,
    /// Every capture of the flow: name → the first step capturing it.
    pub(super) capturers: &'a IndexMap<String, String>,
}

impl Scope<'_> {
    pub(super) fn resolve(&self, name: &str) -> Result<Name, String> {
        if let Some(column) = name.strip_prefix("row.") {
            return self.column(column).map(|c| Name::Var(Var::Column(c)));
        }
        if let Some(v) = builtin(name)? {
            return Ok(Name::Var(v));
        }
        if let Some(slot) = self.captured.get(name) {
            return Ok(Name::Var(Var::Capture(*slot)));
        }
        if let Some(text) = self.vars.get(name) {
            return Ok(Name::Text(text.clone()));
        }
        Err(self.unknown(name))
    }

    pub(super) fn column(&self, column: &str) -> Result<usize, String> {
        let Some(f) = self.feeder else {
            return Err(format!(
                "'{{{{row.{column}}}}}': flow {} has no feeder; name one with feeder = \"NAME\" under [flow.{}]",
                self.flow, self.flow
            ));
        };
        f.columns.iter().position(|c| c == column).ok_or_else(|| {
            format!(
                "'{{{{row.{column}}}}}': feeder {} has no column {column}{}",
                f.name,
                hint(column, f.columns.iter().map(String::as_str))
            )
        })
    }

    pub(super) fn unknown(&self, name: &str) -> String {
        let head = format!("'{{{{{name}}}}}' is not captured before step {}", self.step);
        match self.capturers.get(name) {
            Some(by) if by == self.step => {
                format!("{head}: a step's captures are for the steps after it")
            }
            Some(by) => format!("{head}: step {by} captures it, later in the flow"),
            None => {
                let columns =
                    self.feeder.map_or(Vec::new(), |f| f.columns.iter().map(|c| format!("row.{c}")).collect());
                let known: Vec<&str> = (self.captured.keys().chain(self.vars.keys()).map(String::as_str))
                    .chain(columns.iter().map(String::as_str))
                    .chain(BUILTINS)
                    .collect();
                match closest(name, known.iter().copied()) {
                    Some(k) => format!("{head} (did you mean {k}?)"),
                    None => format!("{head}, nor is it a [vars] name or a built-in (known here: {})", list(&known)),
                }
            }
        }
    }

    /// Compiles `text`, and beside it the same text with `0` for each run-time variable.
    pub(super) fn compile(&self, text: &str, json: bool) -> Result<Built, String> {
        let tpl = Template::compile(text, json, &|n| self.resolve(n))?;
        let zeros = Template::compile(text, json, &|n| {
            self.resolve(n).map(|v| match v {
                Name::Var(_) => Name::Text("0".into()),
                constant => constant,
            })
        })?;
        Ok(Built { tpl, sample: zeros.as_literal().expect("no variable left").to_vec() })
    }
}

/// A template being put together, and beside it its text with `0` for each run-time
/// variable: what URLs and header values are checked with, and a form's boundary chosen
/// against, when the file is read.
#[derive(Default)]
pub(super) struct Built {
    pub(super) tpl: Template,
    pub(super) sample: Vec<u8>,
}

impl Built {
    pub(super) fn lit(bytes: &[u8]) -> Built {
        Built { tpl: Template::literal(bytes), sample: bytes.to_vec() }
    }

    pub(super) fn then(mut self, other: Built) -> Built {
        self.tpl = self.tpl.then(other.tpl);
        self.sample.extend_from_slice(&other.sample);
        self
    }
}

/// The `{{...}}` names in `text`, as written.
pub(super) fn names_in(text: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else { break };
        names.push(after[..close].trim());
        rest = &after[close + 2..];
    }
    names
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::super::testing::closed;
    use std::path::Path;

    #[test]
    fn constants_fill_at_load_and_json_bodies_escape_their_values() {
        let text = "[vars]\nhost = \"h:1/api\"\nuser = \"ann\"\n[[flow.a.step]]\nname = \"s\"\nmethod = \"PUT\"\nurl = \"http://{{host}}/u/{{user}}/{{flow.worker}}\"\nheaders = { X-N = \"{{flow.id}}\" }\njson = { name = \"{{user}}\", at = \"{{seq}}\", list = [1, 2.5, true] }\n";
        let vars = [("user".to_string(), "b\"ob".to_string())];
        let (s, t) = parse(text, "dir/s.toml", Path::new("."), &vars, &closed(1)).unwrap();
        assert_eq!(s.name, "s", "named after the file's stem");
        assert_eq!(t[0].url.to_string(), "http://h:1/api/u/b%22ob/0".replace("%22", "\""));
        assert_eq!(t[0].headers["content-type"], "application/json");
        let step = &s.flows[0].steps[0];
        let mut st = s.start_flow(0, 7, 0, 1).unwrap();
        assert_eq!(
            step.path.as_ref().unwrap().fill_string(&mut st),
            "/api/u/b\"ob/7",
            "a constant's path part stays in the path"
        );
        let body = step.body.as_ref().unwrap().fill_string(&mut st);
        let json: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(json, serde_json::json!({ "name": "b\"ob", "at": "0", "list": [1, 2.5, true] }));
        // Constant bodies and headers stay on the target.
        let constant = text.replace("{{seq}}", "x").replace("{{flow.id}}", "1").replace("/{{flow.worker}}", "");
        let (s, t) = parse(&constant, "s.toml", Path::new("."), &[], &closed(1)).unwrap();
        let step = &s.flows[0].steps[0];
        assert!(step.body.is_none() && step.headers.is_empty() && step.path.is_none());
        assert_eq!(serde_json::from_slice::<serde_json::Value>(&t[0].body).unwrap()["name"], "ann");
        assert_eq!(t[0].headers["x-n"], "1");
        let e = parse(text, "s.toml", Path::new("."), &[("row.x".into(), "1".into())], &closed(1)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "s.toml: --var row.x: not a variable name (letters, digits, '_', '.' and '-', not a built-in)"
        );
    }
}
