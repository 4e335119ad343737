//! What another local user of the machine can do to the owner's daemon (G14), tried as one: a
//! second unprivileged user made for the test (`common::users`), acting through `setpriv`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

use crate::common::*;

/// Idle connections the other user holds: more than the owner's whole pool (64).
const FLOOD: usize = 80;

/// A bash process of `user` holding `FLOOD` idle TCP connections to `port`; it reports
/// `held` once every `connect` returned and, when asked, how many the daemon still keeps
/// open. Killed when dropped (before the user is removed).
struct Flood {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

const FLOOD_SCRIPT: &str = r#"
fds=()
for _ in $(seq "$1"); do
  exec {fd}<>"/dev/tcp/127.0.0.1/$2" || { echo "connect failed"; exit 1; }
  fds+=("$fd")
done
echo held
read -r _
open=0
# A connection the daemon closed is readable (end of file); one it keeps has nothing to read.
for fd in "${fds[@]}"; do read -t 0 -u "$fd" || open=$((open + 1)); done
echo "$open"
read -r _
"#;

impl Flood {
    fn start(user: &LocalUser, port: u16) -> Flood {
        let mut child = user
            .command("bash")
            .args(["-c", FLOOD_SCRIPT, "flood", &FLOOD.to_string(), &port.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("run bash as the other user");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut flood = Flood { child, stdin, stdout };
        assert_eq!(flood.line(), "held", "the flood did not connect");
        flood
    }

    fn line(&mut self) -> String {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read the flood's answer");
        line.trim().to_string()
    }

    /// How many of its connections the daemon still keeps open.
    fn still_open(&mut self) -> usize {
        writeln!(self.stdin).expect("ask the flood");
        let answer = self.line();
        answer
            .parse()
            .unwrap_or_else(|_| panic!("the flood said {answer:?}"))
    }
}

impl Drop for Flood {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// Connections were counted before they authenticated: another user holding 64 idle sockets
/// made every one of the owner's calls fail. Now the other user's take places from a small
/// pool of their own (told apart by the uid owning the peer socket), and with 80 of them
/// held open the owner's `status` and a turn start and end all succeed, while the daemon
/// still keeps some of the other user's connections open (the flood was there throughout).
#[test]
fn another_users_idle_connections_never_deny_the_owner() {
    let Some(user) = LocalUser::create("flood") else {
        return;
    };
    let ws = Workspace::new();
    // The held connections must not time out during the test, however slow the machine.
    let daemon = Daemon::start_with_env(&ws, &[], &[("FILEWATCHD_TEST_HTTP_TIMEOUT_MS", "600000")]);
    let mut flood = Flood::start(&user, daemon.port);

    for i in 0..8 {
        let out = cli_state(&ws, &["status"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "status #{i} failed beside the flood: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    daemon.turn_start("s", "beside a flood");
    ws.write("a.txt", "recorded\n");
    let ended = daemon.turn_end("s");
    assert!(
        ended.to_string().contains("a.txt"),
        "the turn lost its change: {ended:#}"
    );

    let open = flood.still_open();
    assert!(
        open > 0,
        "the daemon had closed every one of the other user's connections: the test proved nothing"
    );
    drop(flood);
    drop(user);
}
