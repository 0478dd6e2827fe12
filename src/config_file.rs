//! The configuration file of `vegdb serve` (`--config FILE` or `VEGDB_CONFIG`): TOML whose keys
//! are the long flag names of `vegdb serve` without the leading `--` (`query-budget = 2.5`,
//! `read-only = true`, `listen = "0.0.0.0:8080"`), plus the global `log` and `log-json`.
//!
//! Generic over clap: the keys are read from the clap `Command` of the subcommand, so a flag added
//! to `ServeArgs` is a key at once. A key takes effect only where the value's source is clap's
//! default (or nothing): precedence is flag > environment variable > file > default. It is applied
//! by appending `--key=value` to the command line and parsing again, so values are checked by the
//! same parsers as flags. Unknown keys, tables and values of the wrong kind are errors naming the
//! file and the key.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, CommandFactory, FromArgMatches};

use crate::cli::Cli;

/// The id of the `--config` argument (in `ServeArgs`).
pub const CONFIG_ARG: &str = "config";

/// The command line parsed, with the configuration file applied.
pub struct Parsed {
    pub cli: Cli,
    /// The final matches (file values included).
    pub matches: ArgMatches,
    /// The configuration file read, if any.
    pub file: Option<PathBuf>,
    /// Ids of the arguments whose value came from the file.
    pub from_file: BTreeSet<String>,
}

/// The subcommands whose arguments are `ServeArgs` (`serve`, `config print`): their path.
const SERVE_LIKE: &[&[&str]] = &[&["serve"], &["config", "print"]];

/// Parse the process's command line (see [`parse_from`]); clap's own errors and `--help` exit.
pub fn parse() -> anyhow::Result<Parsed> {
    parse_from(std::env::args_os().collect())
}

/// Parse `argv` (with the program name first). `vegdb` without a subcommand is `vegdb serve`.
pub fn parse_from(mut argv: Vec<OsString>) -> anyhow::Result<Parsed> {
    let first = Cli::command()
        .try_get_matches_from(&argv)
        .unwrap_or_else(|e| e.exit());
    if first.subcommand().is_none() {
        argv.insert(argv.len().min(1), "serve".into());
        return parse_from(argv);
    }
    let finish = |matches: ArgMatches, file, from_file| -> anyhow::Result<Parsed> {
        let cli = Cli::from_arg_matches(&matches).map_err(|e| anyhow::anyhow!(e.render()))?;
        Ok(Parsed {
            cli,
            matches,
            file,
            from_file,
        })
    };
    let Some((path, sub)) = serve_like(&first) else {
        return finish(first, None, BTreeSet::new());
    };
    let Some(file) = sub.get_one::<PathBuf>(CONFIG_ARG).cloned() else {
        return finish(first, None, BTreeSet::new());
    };
    let args = keys_of(path);
    let (extra, from_file) = file_arguments(&file, &args, sub)?;
    argv.extend(extra);
    let matches = Cli::command().try_get_matches_from(&argv).map_err(|e| {
        anyhow::anyhow!(
            "configuration file {}: {}",
            file.display(),
            e.render().to_string().trim()
        )
    })?;
    finish(matches, Some(file), from_file)
}

/// The matches of the serve-like subcommand, with its path.
fn serve_like(m: &ArgMatches) -> Option<(&'static [&'static str], &ArgMatches)> {
    'paths: for path in SERVE_LIKE {
        let mut at = m;
        for name in path.iter() {
            match at.subcommand() {
                Some((n, sub)) if n == *name => at = sub,
                _ => continue 'paths,
            }
        }
        return Some((path, at));
    }
    None
}

/// The arguments that are configuration keys: those of the subcommand at `path` with a long
/// name, and the global ones, less `--config`, `--help` and `--version`.
pub fn keys_of(path: &[&str]) -> Vec<Arg> {
    let root = Cli::command();
    let mut cmd = &root;
    for name in path {
        match cmd.find_subcommand(name) {
            Some(c) => cmd = c,
            None => return Vec::new(),
        }
    }
    let globals = root.get_arguments().filter(|a| a.is_global_set());
    cmd.get_arguments()
        .chain(globals)
        .filter(|a| {
            a.get_long().is_some()
                && a.get_id().as_str() != CONFIG_ARG
                && !matches!(
                    a.get_action(),
                    ArgAction::Help
                        | ArgAction::HelpShort
                        | ArgAction::HelpLong
                        | ArgAction::Version
                )
        })
        .cloned()
        .collect()
}

/// Whether the argument is an on/off switch (`--read-only`).
fn is_switch(a: &Arg) -> bool {
    matches!(a.get_action(), ArgAction::SetTrue | ArgAction::SetFalse)
}

/// Read `file` and turn its keys into `--key=value` arguments for those arguments whose value
/// came from neither the command line nor the environment.
fn file_arguments(
    file: &Path,
    args: &[Arg],
    given: &ArgMatches,
) -> anyhow::Result<(Vec<OsString>, BTreeSet<String>)> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("reading the configuration file {}", file.display()))?;
    let doc: toml_edit::DocumentMut = text.parse().map_err(|e| {
        anyhow::anyhow!(
            "configuration file {} is not valid TOML: {e}",
            file.display()
        )
    })?;
    let mut extra = Vec::new();
    let mut from_file = BTreeSet::new();
    for (key, item) in doc.iter() {
        let Some(arg) = args.iter().find(|a| a.get_long() == Some(key)) else {
            let hint = args
                .iter()
                .filter_map(|a| a.get_long())
                .find(|l| l.replace('-', "_") == key.replace('-', "_"))
                .map(|l| format!(" (did you mean `{l}`?)"))
                .unwrap_or_default();
            let known: Vec<&str> = args.iter().filter_map(|a| a.get_long()).collect();
            bail!(
                "configuration file {}: unknown key `{key}`{hint}; the keys are the flag names of `vegdb serve` without `--`: {}",
                file.display(),
                known.join(", ")
            );
        };
        let id = arg.get_id().as_str();
        if matches!(
            given.value_source(id),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        ) {
            continue; // the flag or the environment wins
        }
        let Some(value) = item.as_value() else {
            bail!(
                "configuration file {}: `{key}` must be a value (a string, number, boolean or array), not a table",
                file.display()
            );
        };
        let wrong = |what: &str| {
            anyhow::anyhow!(
                "configuration file {}: `{key}` {what}, not {}",
                file.display(),
                value.type_name()
            )
        };
        if is_switch(arg) {
            match value.as_bool() {
                Some(true) => extra.push(format!("--{key}").into()),
                Some(false) => {}
                None => return Err(wrong("is a switch and takes true or false")),
            }
        } else {
            let items: Vec<&toml_edit::Value> = match value.as_array() {
                Some(a) => a.iter().collect(),
                None => vec![value],
            };
            for v in items {
                let s = scalar(v).ok_or_else(|| wrong("takes a string, number or boolean"))?;
                extra.push(format!("--{key}={s}").into());
            }
        }
        from_file.insert(id.to_string());
    }
    Ok((extra, from_file))
}

/// A TOML scalar as the text a flag would carry.
fn scalar(v: &toml_edit::Value) -> Option<String> {
    Some(match v {
        toml_edit::Value::String(s) => s.value().clone(),
        toml_edit::Value::Integer(i) => i.value().to_string(),
        toml_edit::Value::Float(f) => f.value().to_string(),
        toml_edit::Value::Boolean(b) => b.value().to_string(),
        toml_edit::Value::Datetime(d) => d.value().to_string(),
        _ => return None,
    })
}

/// A flag's text as a TOML value: numbers stay numbers, everything else is a string.
fn toml_value(raw: &str) -> toml_edit::Value {
    if let Ok(i) = raw.parse::<i64>() {
        return i.into();
    }
    if let Ok(f) = raw.parse::<f64>() {
        if f.is_finite() {
            return f.into();
        }
    }
    raw.into()
}

/// `vegdb config print`: the effective configuration of the serve-like subcommand in `parsed`,
/// as TOML that `--config` reads back (each key with its help and where its value came from;
/// unset optional keys as comments).
pub fn effective_toml(parsed: &Parsed) -> String {
    let Some((path, m)) = serve_like(&parsed.matches) else {
        return String::new();
    };
    let mut out = String::from(
        "# vegdb serve: effective configuration (precedence: flag > environment > file > default)\n",
    );
    if let Some(f) = &parsed.file {
        out.push_str(&format!("# configuration file: {}\n", f.display()));
    }
    for arg in keys_of(path) {
        let id = arg.get_id().as_str();
        let key = arg.get_long().unwrap_or(id);
        out.push('\n');
        if let Some(help) = arg.get_help() {
            for line in help.to_string().lines() {
                out.push_str(&format!("# {line}\n"));
            }
        }
        let source = if parsed.from_file.contains(id) {
            "file".to_string()
        } else {
            match m.value_source(id) {
                Some(ValueSource::CommandLine) => "flag".into(),
                Some(ValueSource::EnvVariable) => arg
                    .get_env()
                    .map(|e| format!("environment {}", e.to_string_lossy()))
                    .unwrap_or_else(|| "environment".into()),
                Some(ValueSource::DefaultValue) => "default".into(),
                _ => "not set".into(),
            }
        };
        let raw: Vec<String> = m
            .get_raw(id)
            .map(|vals| vals.map(|v| v.to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        let value: Option<toml_edit::Value> = if is_switch(&arg) {
            Some(m.get_flag(id).into())
        } else if raw.is_empty() {
            None
        } else if raw.len() > 1 || matches!(arg.get_action(), ArgAction::Append) {
            let mut a = toml_edit::Array::new();
            for r in &raw {
                a.push(toml_value(r));
            }
            Some(a.into())
        } else {
            Some(toml_value(&raw[0]))
        };
        match value {
            Some(v) => out.push_str(&format!("{key} = {}  # {source}\n", v.to_string().trim())),
            None => out.push_str(&format!("# {key} = (not set)\n")),
        }
    }
    out
}
