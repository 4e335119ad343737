//! `filewatchd pin`, `unpin`, `pins`: named checkpoints that retention keeps and
//! `rollback --pin NAME` returns to.

use clap::Args;

use super::flags::{JsonFlag, SessionArg, valid_duration, valid_time};
use super::style::{Paint, paint};
use super::{Client, Hint, encode, escape, print, resolve_session, rollback};
use crate::wire::error::ErrorCode;
use crate::wire::pin::{Pin, Pins};
use crate::wire::request::{self, NewPin};

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("point").args(["turn", "at", "ago"])))]
pub struct PinCmd {
    /// The pin's name: 1 to 128 characters of A-Z a-z 0-9 . _ : -
    pub name: String,
    /// Pin the end of this turn of the session (a number, a ref or `current`); default: the
    /// workspace now.
    #[arg(long, value_name = "N")]
    pub turn: Option<String>,
    /// Pin the state recorded at this time (RFC 3339, e.g. 2026-11-30T10:00:00Z).
    #[arg(long, value_name = "TIME", value_parser = valid_time)]
    pub at: Option<String>,
    /// Pin the state recorded this long ago (e.g. 10m, 2h, 1day).
    #[arg(long, value_name = "DURATION", value_parser = valid_duration)]
    pub ago: Option<String>,
    #[command(flatten)]
    pub session: SessionArg,
    #[command(flatten)]
    pub json: JsonFlag,
}

#[derive(Debug, Args)]
pub struct UnpinCmd {
    /// The pin to remove (`filewatchd pins` lists them).
    pub name: String,
    #[command(flatten)]
    pub json: JsonFlag,
}

pub fn pin(client: &Client, cmd: PinCmd) -> anyhow::Result<()> {
    let mut body = NewPin {
        name: Some(cmd.name),
        ..NewPin::default()
    };
    if let Some(turn) = &cmd.turn {
        body.session = Some(resolve_session(client, cmd.session.session)?);
        body.turn = Some(request::turn(turn));
    }
    body.at = match (cmd.at, cmd.ago) {
        (Some(at), _) => Some(at),
        (_, Some(ago)) => Some(rollback::time_ago(&ago)?),
        _ => None,
    };
    let answer: Pin = client
        .post_as("/v1/pins", &body)
        .hint(ErrorCode::PinExists, "`filewatchd unpin NAME` frees the name")
        .hint(ErrorCode::NotFound, super::LIST_TURNS)?;
    print::answer(&answer, cmd.json.json, |a| {
        println!(
            "pinned {}: {}",
            paint(&escape::text(&a.name), Paint::Bold),
            point(a)
        );
        println!(
            "  back to it: filewatchd rollback --pin {}",
            escape::text(&a.name)
        );
    })
}

pub fn unpin(client: &Client, cmd: UnpinCmd) -> anyhow::Result<()> {
    let answer: Pin = client
        .delete_as(&format!("/v1/pins/{}", encode(&cmd.name)))
        .hint(ErrorCode::NotFound, super::LIST_PINS)?;
    print::answer(&answer, cmd.json.json, |a| {
        println!(
            "unpinned {} ({}); the next gc may remove history only it kept",
            paint(&escape::text(&a.name), Paint::Bold),
            point(a)
        );
    })
}

pub fn pins(client: &Client, json: JsonFlag) -> anyhow::Result<()> {
    let answer: Pins = client.get_as("/v1/pins")?;
    print::answer(&answer, json.json, |a| {
        if a.pins.is_empty() {
            println!("no pins yet: `filewatchd pin NAME` names the workspace as it is now");
        }
        let width = a
            .pins
            .iter()
            .map(|p| escape::text(&p.name).len())
            .max()
            .unwrap_or(0);
        for p in &a.pins {
            let name = format!("{:<width$}", escape::text(&p.name));
            println!(
                "{}  {}  {}",
                paint(&name, Paint::Bold),
                point(p),
                paint(&format!("pinned {}", escape::text(&p.created_at)), Paint::Dim)
            );
        }
    })
}

/// The point a pin names, in words: "the end of turn 3 of s1 (seq 120)".
fn point(pin: &Pin) -> String {
    let what = match (&pin.session, pin.turn, &pin.at) {
        (Some(session), Some(turn), _) => format!("the end of turn {turn} of {}", escape::text(session)),
        (_, _, Some(at)) => format!("the state recorded at {}", escape::text(at)),
        _ => "the workspace when it was pinned".to_string(),
    };
    format!("{what} (seq {})", pin.seq)
}
