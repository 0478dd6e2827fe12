//! Operating vegdb from the outside: the real binary bound before it loads, a copied
//! binary serving the embedded demo from an empty directory, the configuration file and
//! `config print`, clear messages for missing directories, the refusal of a corrupt CURRENT
//! with `snapshot rollback`, and help text on every flag.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use clap::CommandFactory;
use serde_json::Value;
use vegdb::generate::{generate_into, Scale};
use vegdb::snapshot::manifest::Manifest;
use vegdb::snapshot::store::DataDir;

const BIN: &str = env!("CARGO_BIN_EXE_vegdb");

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn vegdb(args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args)
        .env_remove("VEGDB_CONFIG")
        .env_remove("VEGDB_LISTEN")
        .env_remove("VEGDB_DATA")
        .env_remove("VEGDB_QUERY_BUDGET")
        .env_remove("VEGDB_READ_ONLY")
        .env_remove("VEGDB_WORKERS")
        .env("VEGDB_LOG", "warn");
    c
}

/// A server child killed on drop; its stderr goes to a file.
struct Running {
    child: Child,
    log: PathBuf,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Running {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

fn spawn(mut cmd: Command, log: PathBuf) -> Running {
    let err = std::fs::File::create(&log).unwrap();
    let child = cmd.stdout(Stdio::null()).stderr(err).spawn().unwrap();
    Running { child, log }
}

fn get(url: &str) -> Option<(u16, String)> {
    let r = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
        .get(url)
        .send()
        .ok()?;
    let st = r.status().as_u16();
    Some((st, r.text().unwrap_or_default()))
}

/// Wait until `/ready` is 200; panics with the server's log when it exits or takes too long.
fn wait_ready(s: &mut Running, root: &str) {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        if let Some((200, _)) = get(&format!("{root}/ready")) {
            return;
        }
        if let Ok(Some(code)) = s.child.try_wait() {
            panic!("the server exited with {code}: {}", s.log());
        }
        assert!(Instant::now() < deadline, "not ready in time: {}", s.log());
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_port_in_use_fails_at_once_before_anything_is_loaded() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let started = Instant::now();
    let out = vegdb(&["serve", "--listen", &format!("127.0.0.1:{port}"), "--data"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let t = text(&out);
    assert!(
        t.contains(&format!("cannot listen on 127.0.0.1:{port}")),
        "{t}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // bound before the data: the data directory was not even created
    assert!(!data.exists(), "the data directory is untouched");
}

#[test]
fn a_copied_binary_serves_the_embedded_demo_from_an_empty_directory() {
    // the binary alone in an empty directory, away from the checkout, configured by a file
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("vegdb");
    std::fs::copy(BIN, &bin).unwrap();
    let port = free_port();
    std::fs::write(
        tmp.path().join("vegdb.toml"),
        format!(
            "listen = \"127.0.0.1:{port}\"\nrequest-timeout = 12\nwriter-priority = \"normal\"\n"
        ),
    )
    .unwrap();
    let mut cmd = Command::new(&bin);
    cmd.arg("serve")
        .current_dir(tmp.path())
        .env_clear()
        .env("VEGDB_CONFIG", "vegdb.toml")
        .env("VEGDB_LOG", "info")
        .env("TMPDIR", tmp.path());
    let mut s = spawn(cmd, tmp.path().join("stderr.log"));
    let root = format!("http://127.0.0.1:{port}");
    wait_ready(&mut s, &root);
    // the demo's objects, as many as the committed snapshot's manifest lists
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots/demo");
    let id = DataDir::read_only(&committed).current().unwrap().unwrap();
    let m = Manifest::read(&DataDir::read_only(&committed).generation_dir(id)).unwrap();
    let rows_105: u64 = m
        .files
        .iter()
        .filter(|f| f.type_id == Some(105))
        .map(|f| f.rows)
        .sum();
    assert!(rows_105 > 0);
    let (st, body) = get(&format!("{root}/nvdb/api/v2/vegobjekter/105/statistikk")).unwrap();
    assert_eq!(st, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["antall"].as_u64(), Some(rows_105), "{body}");
    let (st, body) = get(&format!(
        "{root}/nvdb/api/v2/posisjon?lat=63.3101&lon=10.5531&maks_avstand=200"
    ))
    .unwrap();
    assert_eq!(st, 200, "{body}");
    // materialised into ./data (the default) as generation `id`
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("data/CURRENT"))
            .unwrap()
            .trim(),
        id.to_string()
    );
    // the banner: version, address, data directory, generation; no colour codes in a file
    let log = s.log();
    let banner = log
        .lines()
        .find(|l| l.contains(" ready on "))
        .unwrap_or_else(|| panic!("no banner: {log}"));
    let data_abs = std::fs::canonicalize(tmp.path().join("data")).unwrap();
    for part in [
        format!("vegdb {}", env!("CARGO_PKG_VERSION")),
        format!("http://127.0.0.1:{port}"),
        format!("data {}", data_abs.display()),
        format!("generation {id}"),
    ] {
        assert!(banner.contains(&part), "{part} in {banner}");
    }
    assert!(!log.contains('\u{1b}'), "no ANSI escapes: {log:?}");
    // the container health check: `vegdb probe` (0.0.0.0 would be asked on the loopback)
    let probe = vegdb(&["probe", "--listen", &format!("0.0.0.0:{port}")])
        .output()
        .unwrap();
    assert!(probe.status.success(), "{}", text(&probe));
    assert!(text(&probe).contains("200 OK"), "{}", text(&probe));
    drop(s);
    let probe = vegdb(&["probe", "--listen", &format!("127.0.0.1:{port}")])
        .output()
        .unwrap();
    assert!(!probe.status.success(), "nobody listens: {}", text(&probe));

    // --read-only with no data directory: the demo from a cache copy under TMPDIR
    let port = free_port();
    let mut cmd = Command::new(&bin);
    cmd.args([
        "serve",
        "--read-only",
        "--data",
        "nothing-here-is-default-data",
    ])
    .args(["--listen", &format!("127.0.0.1:{port}")])
    .current_dir(tmp.path())
    .env_clear()
    .env("TMPDIR", tmp.path());
    let out = cmd.output().unwrap();
    assert!(!out.status.success());
    let t = text(&out);
    assert!(
        t.contains("no data directory at")
            && t.contains(&format!(
                "{}",
                tmp.path()
                    .join("nothing-here-is-default-data/CURRENT")
                    .display()
            )),
        "{t}"
    );
    let empty = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(&bin);
    cmd.args([
        "serve",
        "--read-only",
        "--listen",
        &format!("127.0.0.1:{port}"),
    ])
    .current_dir(empty.path())
    .env_clear()
    .env("TMPDIR", tmp.path());
    let mut s = spawn(cmd, tmp.path().join("ro.log"));
    let root = format!("http://127.0.0.1:{port}");
    wait_ready(&mut s, &root);
    let (st, body) = get(&format!("{root}/nvdb/api/v2/status")).unwrap();
    assert_eq!(st, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["datagrunnlag"]["generasjon"]["id"], id);
    assert!(
        std::fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("vegdb-demo-")),
        "the cache copy lies under TMPDIR"
    );
    assert!(
        std::fs::read_dir(empty.path()).unwrap().next().is_none(),
        "read-only writes nothing where it runs"
    );
}

#[test]
fn a_missing_directory_is_named_where_it_was_looked_for() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no/such/dir");
    for args in [
        vec!["snapshot", "verify", "--data"],
        vec!["snapshot", "inspect", "--data"],
        vec!["snapshot", "rollback", "--to", "1", "--data"],
    ] {
        let out = vegdb(&args).arg(&missing).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        let t = text(&out);
        assert!(
            t.contains("no data directory at")
                && t.contains(&missing.join("CURRENT").display().to_string()),
            "{args:?}: {t}"
        );
    }
    // an explicit --demo that holds no snapshot
    let out = vegdb(&["serve", "--listen", "127.0.0.1:0", "--demo"])
        .arg(&missing)
        .arg("--data")
        .arg(tmp.path().join("data"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let t = text(&out);
    assert!(
        t.contains("no snapshot there")
            && t.contains(&missing.join("CURRENT").display().to_string()),
        "{t}"
    );
    assert!(!t.contains("corrupt"), "{t}");
}

/// `config print` with the given configuration file text, environment and flags: (exit ok,
/// stdout + stderr).
fn config_print(file: Option<&str>, env: &[(&str, &str)], flags: &[&str]) -> (bool, String) {
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = vegdb(&["config", "print"]);
    cmd.env_remove("VEGDB_LOG");
    if let Some(text) = file {
        let path = tmp.path().join("vegdb.toml");
        std::fs::write(&path, text).unwrap();
        cmd.arg("--config").arg(&path);
    }
    cmd.args(flags);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (out.status.success(), text(&out))
}

fn parse_toml(text: &str) -> toml_edit::DocumentMut {
    text.parse()
        .unwrap_or_else(|e| panic!("not TOML ({e}):\n{text}"))
}

#[test]
fn the_configuration_file_applies_below_flags_and_environment() {
    let file = "query-budget = 2.5\nworkers = 3\nlisten = \"127.0.0.1:9001\"\nread-only = true\nlog = \"debug\"\n";
    // file only
    let (ok, out) = config_print(Some(file), &[], &[]);
    assert!(ok, "{out}");
    let d = parse_toml(&out);
    assert_eq!(d["query-budget"].as_float(), Some(2.5));
    assert_eq!(d["workers"].as_integer(), Some(3));
    assert_eq!(d["listen"].as_str(), Some("127.0.0.1:9001"));
    assert_eq!(d["read-only"].as_bool(), Some(true));
    assert_eq!(
        d["log"].as_str(),
        Some("debug"),
        "global flags are keys too"
    );
    assert_eq!(
        d["request-timeout"].as_integer(),
        Some(30),
        "defaults shown"
    );
    assert!(out.contains("query-budget = 2.5  # file"), "{out}");
    assert!(out.contains("request-timeout = 30  # default"), "{out}");
    // environment over file, flag over environment
    let (ok, out) = config_print(
        Some(file),
        &[
            ("VEGDB_LISTEN", "127.0.0.1:9002"),
            ("VEGDB_WORKERS", "5"),
            ("VEGDB_LOG", "warn"),
        ],
        &["--workers", "7"],
    );
    assert!(ok, "{out}");
    let d = parse_toml(&out);
    assert_eq!(d["log"].as_str(), Some("warn"));
    assert_eq!(d["listen"].as_str(), Some("127.0.0.1:9002"));
    assert!(out.contains("# environment VEGDB_LISTEN"), "{out}");
    assert_eq!(d["workers"].as_integer(), Some(7));
    assert!(out.contains("workers = 7  # flag"), "{out}");
    assert_eq!(d["query-budget"].as_float(), Some(2.5));
    // VEGDB_CONFIG names the file too; the printed configuration reads back unchanged
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("c.toml");
    std::fs::write(&path, file).unwrap();
    let first = vegdb(&["config", "print"])
        .env("VEGDB_CONFIG", &path)
        .output()
        .unwrap();
    assert!(first.status.success(), "{}", text(&first));
    let printed = String::from_utf8(first.stdout).unwrap();
    assert_eq!(parse_toml(&printed)["workers"].as_integer(), Some(3));
    let again = tmp.path().join("printed.toml");
    std::fs::write(&again, &printed).unwrap();
    let second = vegdb(&["config", "print", "--config"])
        .arg(&again)
        .output()
        .unwrap();
    assert!(second.status.success(), "{}", text(&second));
    let a = parse_toml(&printed);
    let b = parse_toml(&String::from_utf8(second.stdout).unwrap());
    let keys: Vec<&str> = a.iter().map(|(k, _)| k).collect();
    assert_eq!(keys, b.iter().map(|(k, _)| k).collect::<Vec<_>>());
    let plain = |d: &toml_edit::DocumentMut, k: &str| {
        let mut v = d[k].as_value().unwrap().clone();
        v.decor_mut().clear();
        v.to_string()
    };
    for k in keys {
        assert_eq!(plain(&a, k), plain(&b, k), "{k}");
    }
}

#[test]
fn every_serve_flag_is_a_configuration_key() {
    // generic: whatever flags `serve` has (others add theirs), config print lists each
    let (ok, out) = config_print(None, &[], &[]);
    assert!(ok, "{out}");
    let cli = vegdb::cli::Cli::command();
    let serve = cli.find_subcommand("serve").unwrap();
    for arg in serve.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        if long == "config" || long == "help" {
            continue;
        }
        assert!(
            out.lines()
                .any(|l| l.starts_with(&format!("{long} = "))
                    || l.starts_with(&format!("# {long} = "))),
            "--{long} is not in config print:\n{out}"
        );
    }
}

#[test]
fn configuration_file_errors_name_the_file_and_the_key() {
    for (file, wanted) in [
        (
            "listen = \"127.0.0.1:1\"\nlisten-port = 8\n",
            vec!["unknown key `listen-port`", "query-budget"],
        ),
        (
            "query_budget = 2\n",
            vec!["unknown key `query_budget`", "did you mean `query-budget`"],
        ),
        ("query-budget = \"soon\"\n", vec!["--query-budget", "soon"]),
        (
            "read-only = \"yes\"\n",
            vec!["`read-only` is a switch and takes true or false"],
        ),
        ("[serve]\nlisten = \"x\"\n", vec!["`serve`"]),
        ("listen = \n", vec!["not valid TOML"]),
        ("config = \"other.toml\"\n", vec!["unknown key `config`"]),
    ] {
        let (ok, out) = config_print(Some(file), &[], &[]);
        assert!(!ok, "{file}: accepted\n{out}");
        assert!(
            out.contains("vegdb.toml"),
            "{file}: the file is named: {out}"
        );
        for w in wanted {
            assert!(out.contains(w), "{file}: '{w}' missing in: {out}");
        }
    }
    let (ok, out) = config_print(None, &[], &["--config", "/no/such/vegdb.toml"]);
    assert!(!ok);
    assert!(out.contains("/no/such/vegdb.toml"), "{out}");
    // serve refuses the same way before binding anything
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("bad.toml");
    std::fs::write(&path, "verbose = true\n").unwrap();
    let out = vegdb(&["serve", "--config"]).arg(&path).output().unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out).contains("unknown key `verbose`"),
        "{}",
        text(&out)
    );
}

#[test]
fn every_argument_of_every_subcommand_has_help() {
    fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            if id == "help" || id == "version" {
                continue;
            }
            let help = arg
                .get_help()
                .or(arg.get_long_help())
                .map(|h| h.to_string())
                .unwrap_or_default();
            if help.trim().is_empty() {
                missing.push(format!("{path} {id}"));
            }
        }
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            if sub.get_about().is_none() {
                missing.push(format!("{path} {} (the subcommand)", sub.get_name()));
            }
            walk(sub, &format!("{path} {}", sub.get_name()), missing);
        }
    }
    let mut cli = vegdb::cli::Cli::command();
    cli.build();
    let mut missing = Vec::new();
    walk(&cli, "vegdb", &mut missing);
    assert!(missing.is_empty(), "without help: {missing:?}");
    let serve = cli
        .find_subcommand("serve")
        .unwrap()
        .get_about()
        .unwrap()
        .to_string();
    assert!(
        serve.contains("read API") && serve.contains("write API"),
        "{serve}"
    );
}

/// Cut a network file of generation `id` in half (it no longer loads).
fn damage(data: &Path, id: u64) -> (PathBuf, Vec<u8>) {
    let dir = DataDir::read_only(data).generation_dir(id);
    let m = Manifest::read(&dir).unwrap();
    let f = m
        .files
        .iter()
        .find(|f| f.path.starts_with("network/"))
        .unwrap();
    let p = dir.join(&f.path);
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
    (p, bytes)
}

#[test]
fn a_corrupt_current_is_refused_naming_the_last_good_generation_and_rollback_restores_it() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    generate_into(Scale::Tiny, 1, &data).unwrap();
    generate_into(Scale::Tiny, 2, &data).unwrap();
    let dir = DataDir::read_only(&data);
    assert_eq!(dir.current().unwrap(), Some(2));
    assert_eq!(dir.generations().unwrap(), vec![1, 2]);

    // while a server owns the directory, rollback is refused and CURRENT stays
    let port = free_port();
    let mut cmd = vegdb(&[
        "serve",
        "--writer-priority",
        "normal",
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--data",
    ]);
    cmd.arg(&data);
    let mut s = spawn(cmd, tmp.path().join("serve.log"));
    wait_ready(&mut s, &format!("http://127.0.0.1:{port}"));
    let out = vegdb(&["snapshot", "rollback", "--to", "1", "--data"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let t = text(&out);
    assert!(
        t.contains("owned by another vegdb process")
            && t.contains(&format!("pid {}", s.child.id())),
        "{t}"
    );
    assert_eq!(dir.current().unwrap(), Some(2));
    drop(s);

    // CURRENT (2) damaged: serve refuses, naming generation 1 and the rollback command
    let (damaged2, _) = damage(&data, 2);
    let out = vegdb(&[
        "serve",
        "--listen",
        &format!("127.0.0.1:{}", free_port()),
        "--data",
    ])
    .arg(&data)
    .output()
    .unwrap();
    assert!(!out.status.success());
    let t = text(&out);
    for part in [
        "CURRENT generation 2 is corrupt",
        "the last good generation is 1",
        "vegdb snapshot rollback --to 1 --data",
        "vegdb snapshot verify",
    ] {
        assert!(t.contains(part), "'{part}' in: {t}");
    }
    // verify reports every problem: a second damage in another file is listed too
    let m = Manifest::read(&dir.generation_dir(2)).unwrap();
    let other = m
        .files
        .iter()
        .find(|f| f.type_id.is_some())
        .unwrap()
        .path
        .clone();
    let p = dir.generation_dir(2).join(&other);
    let mut bytes = std::fs::read(&p).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&p, bytes).unwrap();
    let out = vegdb(&["snapshot", "verify", "--data"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let t = text(&out);
    let damaged_rel = damaged2
        .strip_prefix(dir.generation_dir(2))
        .unwrap()
        .display()
        .to_string();
    assert!(
        t.lines()
            .any(|l| l.starts_with("PROBLEM") && l.contains(&damaged_rel)),
        "{t}"
    );
    assert!(
        t.lines()
            .any(|l| l.starts_with("PROBLEM") && l.contains(&other)),
        "{t}"
    );

    // a generation that fails verification is not rolled back to
    let (damaged1, good1) = damage(&data, 1);
    let out = vegdb(&[
        "serve",
        "--listen",
        &format!("127.0.0.1:{}", free_port()),
        "--data",
    ])
    .arg(&data)
    .output()
    .unwrap();
    assert!(
        text(&out).contains("no older generation (1) passes verification"),
        "{}",
        text(&out)
    );
    let out = vegdb(&["snapshot", "rollback", "--to", "1", "--data"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let t = text(&out);
    assert!(
        t.contains("generation 1 fails verification") && t.contains("PROBLEM"),
        "{t}"
    );
    assert_eq!(dir.current().unwrap(), Some(2));
    let out = vegdb(&["snapshot", "rollback", "--to", "9", "--data"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        text(&out).contains("generation 9 is not in") && text(&out).contains("1, 2"),
        "{}",
        text(&out)
    );

    // repaired generation 1: rollback moves CURRENT, and serve serves it
    std::fs::write(&damaged1, good1).unwrap();
    let out = vegdb(&["snapshot", "rollback", "--to", "1", "--data"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("is now generation 1 (was 2)"),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read_to_string(data.join("CURRENT"))
            .unwrap()
            .trim(),
        "1"
    );
    let port = free_port();
    let mut cmd = vegdb(&[
        "serve",
        "--writer-priority",
        "normal",
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--data",
    ]);
    cmd.arg(&data);
    let mut s = spawn(cmd, tmp.path().join("serve2.log"));
    let root = format!("http://127.0.0.1:{port}");
    wait_ready(&mut s, &root);
    let (st, body) = get(&format!("{root}/nvdb/api/v2/status")).unwrap();
    assert_eq!(st, 200);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["datagrunnlag"]["generasjon"]["id"], 1);
}

/// The access log of the real binary: one line per request on stderr in the process's log
/// format (`--log-json`: JSON objects; else tracing's text layout), written out when the
/// server stops on SIGTERM; the log filter switches it off (`vegdb::access=off`).
#[test]
fn the_access_log_goes_to_stderr_in_the_log_format_and_obeys_the_filter() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |name: &str, flags: &[&str], filter: &str| -> (Vec<String>, String) {
        let port = free_port();
        let root = format!("http://127.0.0.1:{port}");
        let mut cmd = vegdb(&[
            "serve",
            "--read-only",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ]);
        cmd.args(flags)
            .env("VEGDB_LOG", filter)
            .env("TMPDIR", tmp.path());
        let mut s = spawn(cmd, tmp.path().join(name));
        wait_ready(&mut s, &root);
        let client = reqwest::blocking::Client::new();
        let mut ids = Vec::new();
        for (i, path) in ["/nvdb/api/v2/vegobjekttyper/105", "/nvdb/api/v2/nope"]
            .iter()
            .enumerate()
        {
            let id = format!("{name}-{i}");
            let r = client
                .get(format!("{root}{path}"))
                .header("x-request-id", &id)
                .send()
                .unwrap();
            assert!(r.status().is_success() || r.status() == 404);
            ids.push(id);
        }
        // SIGTERM: a graceful stop writes out what the buffer holds
        let pid = s.child.id().to_string();
        assert!(Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success());
        let _ = s.child.wait();
        (ids, s.log())
    };

    let (ids, log) = run("json.log", &["--log-json"], "info");
    let lines: Vec<Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["target"] == "vegdb::access")
        .filter(|v| {
            let id = v["fields"]["request_id"].as_str().unwrap_or_default();
            ids.iter().any(|i| i == id)
        })
        .collect();
    assert_eq!(lines.len(), 2, "{log}");
    assert!(
        !log.contains("\"level\":\"ERROR\""),
        "the 503s while loading are no errors: {log}"
    );
    for (line, id) in lines.iter().zip(&ids) {
        assert_eq!(line["fields"]["request_id"], id.as_str(), "{log}");
        assert_eq!(line["level"], "INFO");
    }
    assert_eq!(lines[1]["fields"]["status"], 404);
    assert_eq!(lines[1]["fields"]["path"], "/nvdb/api/v2/nope");

    let (ids, log) = run("text.log", &[], "info");
    for id in &ids {
        let line = log
            .lines()
            .find(|l| l.ends_with(&format!(" request_id={id}")))
            .unwrap_or_else(|| panic!("no line for {id}: {log}"));
        assert!(
            line.contains("  INFO vegdb::access: request method=GET path=/nvdb/api/v2/"),
            "{line}"
        );
    }

    let (ids, log) = run("off.log", &[], "info,vegdb::access=off");
    assert!(
        log.contains(" ready on "),
        "the other info lines stay: {log}"
    );
    for id in &ids {
        assert!(!log.contains(id.as_str()), "{log}");
    }
}

/// Each thread of process `pid`: its name and its scheduling policy (`/proc/PID/task/TID/stat`,
/// field 41, counted after the parenthesised name).
#[cfg(target_os = "linux")]
fn thread_policies(pid: u32) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let dir = task.unwrap().path();
        let (Ok(name), Ok(stat)) = (
            std::fs::read_to_string(dir.join("comm")),
            std::fs::read_to_string(dir.join("stat")),
        ) else {
            continue; // the thread ended meanwhile
        };
        let after_name = &stat[stat.rfind(')').unwrap() + 1..];
        let policy = after_name.split_whitespace().nth(41 - 3).unwrap();
        out.push((name.trim().to_string(), policy.parse().unwrap()));
    }
    out
}

/// `--scheduling`: the server's threads run under SCHED_BATCH (3) by default and
/// SCHED_OTHER (0) with `normal`; the writer's threads keep their own `--writer-priority`
/// (SCHED_IDLE, 5) under either.
#[cfg(target_os = "linux")]
#[test]
fn the_server_threads_take_the_scheduling_policy_and_the_writer_keeps_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    for (scheduling, expected) in [(None, 3), (Some("normal"), 0)] {
        let port = free_port();
        let root = format!("http://127.0.0.1:{port}");
        let data = tmp.path().join(format!("data-{expected}"));
        let mut cmd = vegdb(&[
            "serve",
            "--workers",
            "2",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ]);
        cmd.arg("--data").arg(&data).env_remove("VEGDB_SCHEDULING");
        if let Some(s) = scheduling {
            cmd.args(["--scheduling", s]);
        }
        let mut s = spawn(cmd, tmp.path().join(format!("sched-{expected}.log")));
        wait_ready(&mut s, &root);
        // a request on each worker
        for _ in 0..4 {
            assert!(get(&format!("{root}/nvdb/api/v2/status")).is_some());
        }
        let threads = thread_policies(s.child.id());
        let policy_of = |name: &str| -> Vec<i64> {
            threads
                .iter()
                .filter(|(n, _)| n == name)
                .map(|(_, p)| *p)
                .collect()
        };
        // the first worker is the main thread
        assert_eq!(policy_of("vegdb"), vec![expected], "{threads:?}");
        assert_eq!(policy_of("vegdb-worker-1"), vec![expected], "{threads:?}");
        // the writer thread, and any thread it has started meanwhile (which takes its name)
        let writer = policy_of("vegdb-writer");
        assert!(
            !writer.is_empty() && writer.iter().all(|&p| p == 5),
            "{threads:?}"
        );
        for (name, policy) in &threads {
            assert!(
                *policy == expected || name.starts_with("vegdb-writ"),
                "{name} has policy {policy}: {threads:?}"
            );
        }
    }
}
