//! The command line as scripts use it.

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
