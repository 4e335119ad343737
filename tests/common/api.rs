//! The daemon's endpoints in the tests' words: status, turns, histories, rollbacks (undo,
//! redo, in time), forks, pins and garbage collection. Each returns the body of the status it
//! requires, or the `(status, body)` pair where the test checks the status itself.

use serde_json::{Value, json};

use super::{Daemon, expect, percent_encode};

impl Daemon {
    pub fn status(&self) -> Value {
        expect(200, self.get("/v1/status"))
    }

    /// Starts a turn of `session` (201) and returns the answer.
    pub fn turn_start(&self, session: &str, label: &str) -> Value {
        let path = format!("/v1/sessions/{session}/turns");
        expect(201, self.post(&path, json!({ "label": label })))
    }

    /// Ends the `current` turn of `session` (200) and returns the turn with its changes.
    pub fn turn_end(&self, session: &str) -> Value {
        let path = format!("/v1/sessions/{session}/turns/current/end");
        expect(200, self.post_empty(&path))
    }

    /// `GET` one turn (200), with unified diffs if `diff`.
    pub fn turn(&self, session: &str, turn: u64, diff: bool) -> Value {
        let query = if diff { "?diff=true" } else { "" };
        expect(
            200,
            self.get(&format!("/v1/sessions/{session}/turns/{turn}{query}")),
        )
    }

    /// The `turns` of `GET /v1/sessions/{session}/turns` (200).
    pub fn turn_list(&self, session: &str) -> Vec<Value> {
        let listing = expect(200, self.get(&format!("/v1/sessions/{session}/turns")));
        listing["turns"]
            .as_array()
            .unwrap_or_else(|| panic!("turn listing without turns: {listing:#}"))
            .clone()
    }

    /// `GET /v1/history?path=P` (200).
    pub fn history(&self, path: &str) -> Value {
        expect(200, self.history_reply(path))
    }

    pub fn history_reply(&self, path: &str) -> (u16, Value) {
        self.get(&format!("/v1/history?path={}", percent_encode(path)))
    }

    /// `POST /v1/sessions/{session}/rollback`.
    pub fn rollback(&self, session: &str, body: Value) -> (u16, Value) {
        self.post(&format!("/v1/sessions/{session}/rollback"), body)
    }

    /// `POST /v1/sessions/{session}/undo`.
    pub fn undo(&self, session: &str, body: Value) -> (u16, Value) {
        self.post(&format!("/v1/sessions/{session}/undo"), body)
    }

    /// `POST /v1/sessions/{session}/redo`.
    pub fn redo(&self, session: &str, body: Value) -> (u16, Value) {
        self.post(&format!("/v1/sessions/{session}/redo"), body)
    }

    /// `POST /v1/rollback` (a time rollback; the body names `at`).
    pub fn rollback_in_time(&self, body: Value) -> (u16, Value) {
        self.post("/v1/rollback", body)
    }

    /// `POST /v1/redo`: redo of the latest time rollback.
    pub fn redo_in_time(&self, body: Value) -> (u16, Value) {
        self.post("/v1/redo", body)
    }

    /// `POST /v1/sessions/{parent}/fork` with `{"new_session", "turn"}`.
    pub fn fork(&self, parent: &str, new_session: &str, turn: Value) -> (u16, Value) {
        self.post(
            &format!("/v1/sessions/{parent}/fork"),
            json!({"new_session": new_session, "turn": turn}),
        )
    }

    /// `POST /v1/pins` with `{"name", "session"?, "turn"?, "at"?}`.
    pub fn pin(&self, body: Value) -> (u16, Value) {
        self.post("/v1/pins", body)
    }

    /// `DELETE /v1/pins/{name}`.
    pub fn unpin(&self, name: &str) -> (u16, Value) {
        self.delete(&format!("/v1/pins/{name}"))
    }

    /// The `pins` of `GET /v1/pins` (200).
    pub fn pins(&self) -> Vec<Value> {
        let listing = expect(200, self.get("/v1/pins"));
        listing["pins"]
            .as_array()
            .unwrap_or_else(|| panic!("pin listing without pins: {listing:#}"))
            .clone()
    }

    /// `POST /v1/gc` (200) and its report.
    pub fn gc(&self, dry_run: bool) -> Value {
        expect(200, self.post("/v1/gc", json!({ "dry_run": dry_run })))
    }
}
