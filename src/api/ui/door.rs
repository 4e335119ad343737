//! The browser's door: a one-time login code minted for a bearer-token client
//! (`filewatchd ui`), exchanged once for a cookie session with its own CSRF token. Both live in
//! memory only: a restart logs every browser out.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a login code may wait to be used.
const CODE_TTL: Duration = Duration::from_secs(60);
/// How long a browser session lasts (the cookie's `Max-Age`).
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 60 * 60);
/// The cookie's name.
pub const COOKIE: &str = "filewatchd_ui";
/// At most this many codes wait at once: minting more drops the oldest.
const MAX_CODES: usize = 64;

/// The codes waiting to be used and the sessions they opened.
#[derive(Default)]
pub struct Door {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    codes: HashMap<String, Instant>,
    sessions: HashMap<String, Session>,
}

struct Session {
    csrf: String,
    expires: Instant,
}

/// A cookie session just opened: the cookie's value and its CSRF token.
pub struct Opened {
    pub cookie: String,
    pub csrf: String,
}

impl Door {
    /// A fresh one-time code, valid for `CODE_TTL` (shorter with the test knob).
    pub fn mint_code(&self) -> std::io::Result<String> {
        let code = random_hex()?;
        let ttl = crate::test_knobs::get().ui_code_ttl.unwrap_or(CODE_TTL);
        let mut inner = self.lock();
        inner.prune(Instant::now());
        if inner.codes.len() >= MAX_CODES {
            let oldest = inner
                .codes
                .iter()
                .min_by_key(|(_, t)| **t)
                .map(|(c, _)| c.clone());
            if let Some(oldest) = oldest {
                inner.codes.remove(&oldest);
            }
        }
        inner.codes.insert(code.clone(), Instant::now() + ttl);
        Ok(code)
    }

    /// Uses up `code`: a new session if it was waiting and is still valid, else `None`.
    pub fn exchange(&self, code: &str) -> std::io::Result<Option<Opened>> {
        let now = Instant::now();
        let mut inner = self.lock();
        inner.prune(now);
        let Some(key) = inner
            .codes
            .keys()
            .find(|c| constant_time_eq(c.as_bytes(), code.as_bytes()))
            .cloned()
        else {
            return Ok(None);
        };
        inner.codes.remove(&key);
        let opened = Opened {
            cookie: random_hex()?,
            csrf: random_hex()?,
        };
        let session = Session {
            csrf: opened.csrf.clone(),
            expires: now + SESSION_TTL,
        };
        inner.sessions.insert(opened.cookie.clone(), session);
        Ok(Some(opened))
    }

    /// The CSRF token of the live session of `cookie`, if there is one.
    pub fn csrf_of(&self, cookie: &str) -> Option<String> {
        let now = Instant::now();
        let mut inner = self.lock();
        inner.prune(now);
        let key = inner
            .sessions
            .keys()
            .find(|k| constant_time_eq(k.as_bytes(), cookie.as_bytes()))?;
        inner.sessions.get(key).map(|s| s.csrf.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // The maps stay consistent whatever panicked while holding them.
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Inner {
    fn prune(&mut self, now: Instant) {
        self.codes.retain(|_, expires| *expires > now);
        self.sessions.retain(|_, s| s.expires > now);
    }
}

/// 256 random bits as 64 hex digits.
fn random_hex() -> std::io::Result<String> {
    let mut raw = [0u8; 32];
    crate::platform::random_bytes(&mut raw)?;
    Ok(raw.iter().map(|b| format!("{b:02x}")).collect())
}

pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_opens_one_session_once() {
        let door = Door::default();
        let code = door.mint_code().expect("random");
        assert_eq!(code.len(), 64);
        let opened = door.exchange(&code).expect("random").expect("a session");
        assert_eq!(door.csrf_of(&opened.cookie), Some(opened.csrf.clone()));
        assert!(door.exchange(&code).expect("random").is_none());
        assert!(door.csrf_of("nope").is_none());
    }
}
