//! The command line as scripts use it.
#![cfg_attr(test, allow(clippy::unwrap_used))] // tests may unwrap

use std::process::Command;

use vegdb::users::Users;

const BIN: &str = env!("CARGO_BIN_EXE_vegdb");

#[test]
fn user_add_prints_a_working_token_as_its_last_line() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args([
            "user",
            "add",
            "kari",
            "--roles",
            "skriv,korriger",
            "--types",
            "95,96",
            "--data",
        ])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let token = stdout.lines().last().unwrap().trim();
    assert_eq!(token.len(), 64, "{stdout}");
    let file = std::fs::read_to_string(tmp.path().join("users.json")).unwrap();
    assert!(!file.contains(token), "only the hash is stored");
    let users = Users::open(tmp.path().join("users.json")).unwrap();
    let u = users
        .authenticate(token)
        .expect("the printed token authenticates");
    assert_eq!(u.name, "kari");
    assert_eq!(u.types, Some(vec![95, 96]));
    // bad roles are refused with a message, and nothing is written
    let out = Command::new(BIN)
        .args(["user", "add", "ola", "--roles", "superbruker", "--data"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("superbruker"));
    assert!(!std::fs::read_to_string(tmp.path().join("users.json"))
        .unwrap()
        .contains("ola"));
}

/// Run `vegdb args` in `cwd` with `env`; (exit code, stderr). A command still running after
/// 20 s (a server serving a directory made of the URL) is stopped and counts as success.
fn run_in(cwd: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    use std::io::Read;
    let mut child = Command::new(BIN)
        .current_dir(cwd)
        .args(args)
        .envs(env.iter().copied())
        .env_remove("VEGDB_CONFIG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break Some(0);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (code, err)
}

/// Every command that takes `--data` refuses an object store URL (or any
/// URL) with a message naming `--publish-to`, `--follow` and `snapshot push`/`pull`, and makes
/// no local directory of it (`s3:/bucket/prefix/CURRENT` in the working directory).
#[test]
fn every_data_flag_refuses_a_url_and_makes_no_directory_of_it() {
    let commands: &[&[&str]] = &[
        &["serve", "--listen", "127.0.0.1:0"],
        &["config", "print"],
        &["generate", "--scale", "tiny"],
        &["import", "--source", "nowhere"],
        &["refresh", "--source", "nowhere"],
        &["export", "--type", "105", "--format", "geojson"],
        &["user", "add", "kari", "--roles", "skriv"],
        &["snapshot", "inspect"],
        &["snapshot", "verify"],
        &["snapshot", "load"],
        &["snapshot", "queries", "--count", "1"],
        &["snapshot", "rollback", "--to", "1"],
        &["snapshot", "upgrade"],
        &["snapshot", "push", "--to", "s3://b/q"],
        &["snapshot", "pull", "--from", "s3://b/q"],
    ];
    for url in [
        "s3://b/p",
        "gs://b/p",
        "https://example.org/data",
        "file:///tmp/x",
    ] {
        for args in commands {
            for by_env in [false, true] {
                let cwd = tempfile::tempdir().unwrap();
                let mut argv: Vec<&str> = args.to_vec();
                let mut env = vec![
                    // no store reachable, whatever the test machine has set
                    ("AWS_ENDPOINT_URL", "http://127.0.0.1:9"),
                    ("AWS_ACCESS_KEY_ID", "x"),
                    ("AWS_SECRET_ACCESS_KEY", "x"),
                    ("AWS_ALLOW_HTTP", "true"),
                ];
                if by_env {
                    env.push(("VEGDB_DATA", url));
                } else {
                    argv.extend(["--data", url]);
                }
                let (code, err) = run_in(cwd.path(), &argv, &env);
                let what = format!("vegdb {argv:?} (VEGDB_DATA: {by_env})");
                assert!(
                    code.is_some_and(|c| c != 0),
                    "{what} exited {code:?}: {err}"
                );
                assert!(
                    err.contains("--data takes a local directory")
                        && err.contains("--publish-to")
                        && err.contains("--follow")
                        && err.contains("snapshot push")
                        && err.contains("snapshot pull")
                        && err.contains(url),
                    "{what}: {err}"
                );
                let left: Vec<_> = std::fs::read_dir(cwd.path())
                    .unwrap()
                    .map(|e| e.unwrap().file_name())
                    .collect();
                assert!(
                    left.is_empty(),
                    "{what} made {left:?} in its working directory"
                );
            }
        }
    }
}

fn help(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn help_names_the_gis_entry_points_and_https_sources() {
    for args in [&["--help"][..], &["serve", "--help"]] {
        let text = help(args);
        for path in ["/ogc", "/tiles", "/kart"] {
            assert!(
                text.contains(path),
                "{args:?} does not name {path}:\n{text}"
            );
        }
    }
    for command in ["import", "refresh"] {
        let text = help(&[command, "--help"]);
        assert!(text.contains("https://"), "{command} --help:\n{text}");
    }
}
