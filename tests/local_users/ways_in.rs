//! Issue 46's four ways in, tried as the other user: a URL in the environment that would get
//! the workspace's token, a killed daemon's port taken by another user, a `daemon.json` naming
//! a server that is not the user's, and a marker planted in a shared ancestor.

use super::*;

/// The attacker's server on `port`: it prints each request it reads (never an empty
/// connection) as one line, and answers `{}`.
const LISTENER: &str = r#"
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    c.settimeout(5)
    try:
        data = c.recv(65536)
    except OSError:
        data = b""
    if data:
        print(repr(data[:300]), flush=True)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
    c.close()
"#;

/// A server of the attacker's on `port`, killed when dropped.
struct Theirs {
    child: std::process::Child,
    heard: Arc<Mutex<Vec<String>>>,
}

impl Theirs {
    fn listen(user: &LocalUser, port: u16) -> Theirs {
        let mut cmd = user.command("python3");
        cmd.args(["-c", LISTENER, &port.to_string()])
            .stdout(Stdio::piped());
        let mut child = cmd.spawn().expect("python3 as the other user");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let first = lines.next().and_then(Result::ok);
        assert_eq!(
            first.as_deref(),
            Some("listening"),
            "the other user's server did not bind {port}"
        );
        let heard = Arc::new(Mutex::new(Vec::new()));
        let seen = heard.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                seen.lock().expect("lock").push(line);
            }
        });
        Theirs { child, heard }
    }

    fn heard(&self) -> Vec<String> {
        self.heard.lock().expect("lock").clone()
    }
}

impl Drop for Theirs {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn port_of(info: &Value) -> u16 {
    let url = info["url"].as_str().expect("a url");
    url.rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a port")
}

/// `FILEWATCHD_URL` alone names where to go, never whose token to send: the CLI and a hook
/// send the other user's server nothing; the same URL as the daemon's own still works.
#[test]
fn a_url_in_the_environment_never_gets_the_workspaces_token() {
    let Some(scene) = Scene::new() else { return };
    let (ok, stdout, stderr) = scene.victim_run(&["start"]);
    assert!(ok, "{stdout}{stderr}");
    let info = scene.victim_answering();
    let server = Recorder::start();

    let mut cmd = scene.victim_cmd();
    cmd.args(["log"]).env("FILEWATCHD_URL", &server.url);
    let out = run_to_completion(cmd);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "log through another URL succeeded");
    assert!(
        said.contains("FILEWATCHD_TOKEN"),
        "the refusal does not say what to do: {said}"
    );

    let payload = hook_fixture("claude-code", "UserPromptSubmit", &scene.root);
    let mut cmd = scene.victim_cmd();
    cmd.env("FILEWATCHD_URL", &server.url);
    let run = run_hook(cmd, "claude-code", &[], &payload);
    assert!(run.status.success(), "{}", run.stderr);
    assert_eq!(
        server.requests(),
        Vec::<String>::new(),
        "the token went to another URL"
    );

    let mut cmd = scene.victim_cmd();
    cmd.args(["status"])
        .env("FILEWATCHD_URL", info["url"].as_str().unwrap_or_default());
    let out = run_to_completion(cmd);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// After a `kill -9`, `daemon.json` stays and names a port another user then listens on:
/// no command sends it anything (the label, the command line, the token), and each says the
/// daemon is not running.
#[test]
fn a_killed_daemons_port_taken_by_another_user_gets_nothing() {
    let Some(scene) = Scene::new() else { return };
    let (ok, stdout, stderr) = scene.victim_run(&["start"]);
    assert!(ok, "{stdout}{stderr}");
    let info = scene.victim_answering();
    let pid = info["pid"].as_u64().expect("a pid").to_string();
    assert!(
        Command::new("kill")
            .args(["-9", &pid])
            .status()
            .expect("kill")
            .success()
    );
    let gone = poll_until(DEADLINE, || {
        (!std::path::Path::new(&format!("/proc/{pid}")).exists()).then_some(())
    });
    assert!(gone.is_some(), "the daemon outlived kill -9");
    let theirs = Theirs::listen(&scene.attacker, port_of(&info));

    for args in [
        &["turn", "start", "--session", "s", "--label", "SECRET-LABEL"][..],
        &["exec", "--", "echo", "SECRET-COMMAND"],
        &["undo"],
    ] {
        let (ok, stdout, stderr) = scene.victim_run(args);
        assert!(!ok, "{args:?} succeeded against a dead daemon: {stdout}");
        assert!(stderr.contains("no longer running"), "{args:?}: {stderr}");
    }
    let payload = hook_fixture("claude-code", "UserPromptSubmit", &scene.root);
    let mut cmd = scene.victim_cmd();
    cmd.env("FILEWATCHD_AUTOSTART", "0");
    let run = run_hook(cmd, "claude-code", &[], &payload);
    assert!(run.status.success(), "{}", run.stderr);
    assert_eq!(
        theirs.heard(),
        Vec::<String>::new(),
        "the other user's server heard the victim"
    );
}

/// A `daemon.json` of the user's own whose URL leads to another user's server (the lock held,
/// as while a daemon runs) is refused by the server's owner before anything is sent.
#[test]
fn a_server_of_another_user_is_never_sent_the_token() {
    let Some(scene) = Scene::new() else { return };
    let (ok, stdout, stderr) = scene.victim_run(&["start"]);
    assert!(ok, "{stdout}{stderr}");
    let mut info = scene.victim_answering();
    let port = {
        let probe = TcpListener::bind("127.0.0.1:0").expect("a free port");
        probe.local_addr().expect("addr").port()
    };
    let theirs = Theirs::listen(&scene.attacker, port);
    info["url"] = json!(format!("http://127.0.0.1:{port}"));
    let path = scene.victim_state().join("daemon.json");
    scene.victim.write(&path, &info.to_string());
    std::fs::set_permissions(&path, PermissionsExt::from_mode(0o600)).expect("chmod");

    let (ok, stdout, stderr) = scene.victim_run(&["turn", "start", "--session", "s", "--label", "SECRET"]);
    assert!(
        !ok,
        "turn start succeeded against another user's server: {stdout}"
    );
    assert!(
        stderr.contains(&format!("belongs to uid {}", scene.attacker.uid)),
        "the refusal does not say whose server it is: {stderr}"
    );
    assert_eq!(
        theirs.heard(),
        Vec::<String>::new(),
        "the other user's server heard the victim"
    );
}

/// A `.filewatchd.toml` or `.git` the other user planted in a shared ancestor chooses neither
/// the victim's root nor its config, and `start` says so in one line.
#[test]
fn a_marker_planted_above_the_project_chooses_nothing() {
    for marker in [".filewatchd.toml", ".git"] {
        let Some(scene) = Scene::new() else { return };
        let planted = scene.a_tree.join(marker);
        match marker {
            ".git" => drop(scene.attacker.dir(&planted, 0o755)),
            _ => scene.attacker.write(&planted, "ignore = [\"project/**\"]\n"),
        }
        let (ok, stdout, stderr) = scene.victim_run(&["start"]);
        assert!(ok, "{marker}: {stdout}{stderr}");
        let notices: Vec<&str> = stderr.lines().filter(|l| l.contains("passed over")).collect();
        assert_eq!(notices.len(), 1, "{marker}: not said in one line: {stderr}");
        assert!(
            notices[0].contains(&format!("belongs to uid {}", scene.attacker.uid)),
            "{stderr}"
        );
        let info = scene.victim_answering();
        assert_eq!(
            info["root"].as_str(),
            Some(&*scene.root.to_string_lossy()),
            "{marker}: the planted marker chose the root"
        );
    }
}

/// A config file the other user owns is never read, even when named outright.
#[test]
fn another_users_config_is_refused_by_name() {
    let Some(scene) = Scene::new() else { return };
    let theirs = scene.a_home.join("config.toml");
    scene.attacker.write(&theirs, "ignore = [\"**\"]\n");
    let (ok, stdout, stderr) = scene.victim_run(&["start", "--config", &theirs.to_string_lossy()]);
    assert!(!ok, "started with the other user's config: {stdout}");
    assert!(
        stderr.contains(&format!("belongs to uid {}", scene.attacker.uid)),
        "{stderr}"
    );
}
