use crate::{Error, Result, Transport};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// The same operations over a running server's REST API (plain HTTP/1.0, one connection a call).
pub struct RemoteTransport {
    host: String,
    base: String,
    token: Option<String>,
}

/// Percent-encodes everything but unreserved characters (and `:` where ids keep it readable).
fn enc(s: &str, keep_colon: bool) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            b':' if keep_colon => ":".to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl RemoteTransport {
    pub fn new(url: &str, token: Option<&str>) -> Result<Self> {
        let rest = url.strip_prefix("http://").ok_or_else(|| Error::new("invalid_argument", "the URL must start with http://"))?;
        let (host, base) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        Ok(RemoteTransport { host: host.to_string(), base: base.to_string(), token: token.map(String::from) })
    }

    fn request(&self, method: &str, path: &str, body: Option<&Value>) -> Result<(u16, Value)> {
        let unreachable = |e: std::io::Error| Error::new("unavailable", format!("cannot reach svc at http://{}: {e}", self.host));
        let mut stream = TcpStream::connect(&self.host).map_err(unreachable)?;
        stream.set_read_timeout(Some(Duration::from_secs(60))).map_err(unreachable)?;
        let payload = body.map(|b| b.to_string()).unwrap_or_default();
        let auth = self.token.as_ref().map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
        let head = format!(
            "{method} {}{path} HTTP/1.0\r\nHost: {}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            self.base,
            self.host,
            payload.len()
        );
        stream.write_all(head.as_bytes()).and_then(|_| stream.write_all(payload.as_bytes())).map_err(unreachable)?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).map_err(unreachable)?;
        let split = raw.windows(4).position(|w| w == b"\r\n\r\n").ok_or_else(|| Error::new("internal", "malformed HTTP answer"))?;
        let status_line = String::from_utf8_lossy(&raw[..split]);
        let status: u16 = status_line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let body = &raw[split + 4..];
        let json = if body.is_empty() { Value::Null } else { serde_json::from_slice(body).unwrap_or(Value::Null) };
        Ok((status, json))
    }
}

impl Transport for RemoteTransport {
    fn call(&mut self, op: &str, p: Value) -> Result<Value> {
        let id = p.get("id").map(|v| enc(&text(v), true)).unwrap_or_default();
        let query = |names: &[&str]| -> String {
            let parts: Vec<String> = names
                .iter()
                .filter_map(|n| p.get(*n).map(|v| format!("{}={}", if *n == "query" { "q" } else { n }, enc(&text(v), false))))
                .collect();
            if parts.is_empty() { String::new() } else { format!("?{}", parts.join("&")) }
        };
        let doc = |suffix: &str| format!("/api/v1/documents/{id}{suffix}");
        let (method, path, body, unwrap): (&str, String, Option<Value>, Option<&str>) = match op {
            "put" => ("PUT", doc("") + &query(&["branch"]), p.get("doc").cloned(), None),
            "get" => ("GET", doc("") + &query(&["branch"]), None, None),
            "delete" => ("DELETE", doc("") + &query(&["branch"]), None, None),
            "get_as_of" => ("GET", doc("/as-of") + &query(&["commit", "time", "branch"]), None, None),
            "history" => ("GET", doc("/history") + &query(&["limit", "cursor", "branch"]), None, None),
            "diff" => ("GET", doc("/diff") + &query(&["from", "to", "branch"]), None, Some("changes")),
            "list" => ("GET", "/api/v1/documents".to_string() + &query(&["prefix", "table", "limit", "cursor", "branch"]), None, None),
            "search" => ("GET", "/api/v1/search".to_string() + &query(&["query", "limit", "offset", "table", "branch"]), None, None),
            "query" => ("POST", "/api/v1/query".into(), Some(p.clone()), None),
            "branches" => ("GET", "/api/v1/branches".into(), None, Some("branches")),
            "create_branch" => ("POST", "/api/v1/branches".into(), Some(p.clone()), None),
            "remove_branch" => ("DELETE", format!("/api/v1/branches/{}", enc(&text(&p["name"]), false)), None, None),
            "create_backup" => ("POST", "/api/v1/backup".into(), Some(p.clone()), None),
            "export_snapshot" => ("POST", "/api/v1/export".into(), Some(p.clone()), None),
            _ => return Err(Error::new("invalid_argument", format!("{op} is not available over REST; open the data directory with toolkit_svc::open"))),
        };
        let (status, answer) = self.request(method, &path, body.as_ref())?;
        if status >= 400 {
            let err = &answer["error"];
            let code = err["sqlstate"].as_str().or(err["code"].as_str()).unwrap_or("internal");
            if status == 404 && code == "not_found" && (op == "get" || op == "get_as_of") {
                return Ok(Value::Null);
            }
            if status == 404 && code == "not_found" && op == "delete" {
                return Ok(serde_json::json!({"existed": false}));
            }
            return Err(Error::new(code, err["message"].as_str().map(String::from).unwrap_or_else(|| format!("HTTP {status}"))));
        }
        Ok(match unwrap {
            Some(key) => answer[key].clone(),
            None => answer,
        })
    }

    fn close(&mut self) -> Result<()> {
        Ok(())
    }
}
