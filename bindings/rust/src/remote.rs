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

/// What a request carries: nothing, a JSON body, or a local file uploaded as multipart/form-data.
enum Body {
    None,
    Json(Value),
    Upload(String, Vec<(&'static str, String)>),
}

/// A `file` part (the named local file) and plain fields, as multipart/form-data.
fn multipart(file: &str, fields: &[(&'static str, String)]) -> Result<(Vec<u8>, String)> {
    let content = std::fs::read(file).map_err(|e| Error::new("invalid_argument", format!("cannot read {file}: {e}")))?;
    let boundary = format!("toolkit-svc-{}-{}", std::process::id(), content.len());
    let mut out = Vec::with_capacity(content.len() + 512);
    for (name, value) in fields {
        out.extend_from_slice(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n").as_bytes());
    }
    let filename = std::path::Path::new(file).file_name().map(|n| n.to_string_lossy().replace('"', "")).unwrap_or_default();
    out.extend_from_slice(
        format!("--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\nContent-Type: application/octet-stream\r\n\r\n").as_bytes(),
    );
    out.extend_from_slice(&content);
    out.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    Ok((out, format!("multipart/form-data; boundary={boundary}")))
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

    fn request(&self, method: &str, path: &str, body: Body) -> Result<(u16, Value)> {
        let (payload, content_type) = match body {
            Body::None => (Vec::new(), "application/json".to_string()),
            Body::Json(v) => (v.to_string().into_bytes(), "application/json".to_string()),
            Body::Upload(file, fields) => multipart(&file, &fields)?,
        };
        let unreachable = |e: std::io::Error| Error::new("unavailable", format!("cannot reach svc at http://{}: {e}", self.host));
        let mut stream = TcpStream::connect(&self.host).map_err(unreachable)?;
        stream.set_read_timeout(Some(Duration::from_secs(60))).map_err(unreachable)?;
        let auth = self.token.as_ref().map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
        let head = format!(
            "{method} {}{path} HTTP/1.0\r\nHost: {}\r\n{auth}Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
            self.base,
            self.host,
            payload.len()
        );
        stream.write_all(head.as_bytes()).and_then(|_| stream.write_all(&payload)).map_err(unreachable)?;
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
        let json = |v: Value| Body::Json(v);
        let input = || p["input"].as_str().map(String::from).ok_or_else(|| Error::new("invalid_argument", "\"input\" is required"));
        let (method, path, body, unwrap): (&str, String, Body, Option<&str>) = match op {
            "put" => ("PUT", doc("") + &query(&["branch"]), p.get("doc").cloned().map(json).unwrap_or(Body::None), None),
            "get" => ("GET", doc("") + &query(&["branch"]), Body::None, None),
            "delete" => ("DELETE", doc("") + &query(&["branch"]), Body::None, None),
            "get_as_of" => ("GET", doc("/as-of") + &query(&["commit", "time", "branch"]), Body::None, None),
            "history" => ("GET", doc("/history") + &query(&["limit", "cursor", "branch"]), Body::None, None),
            "diff" => ("GET", doc("/diff") + &query(&["from", "to", "branch"]), Body::None, Some("changes")),
            "list" => ("GET", "/api/v1/documents".to_string() + &query(&["prefix", "table", "limit", "cursor", "branch"]), Body::None, None),
            "search" => ("GET", "/api/v1/search".to_string() + &query(&["query", "limit", "offset", "table", "branch"]), Body::None, None),
            "query" => ("POST", "/api/v1/query".into(), json(p.clone()), None),
            "branches" => ("GET", "/api/v1/branches".into(), Body::None, Some("branches")),
            "create_branch" => ("POST", "/api/v1/branches".into(), json(p.clone()), None),
            "remove_branch" => ("DELETE", format!("/api/v1/branches/{}", enc(&text(&p["name"]), false)), Body::None, None),
            "create_backup" => ("POST", "/api/v1/backup".into(), json(p.clone()), None),
            "export_snapshot" => ("POST", "/api/v1/export".into(), json(p.clone()), None),
            // The file is uploaded; a running server imports a snapshot, and refuses a restore (it would
            // replace the database under its clients) with a "conflict" error saying how to restore.
            "import_snapshot" => {
                let verify = if p["verify"].as_bool().unwrap_or(false) { "true" } else { "false" };
                ("POST", "/api/v1/import".into(), Body::Upload(input()?, vec![("verify", verify.to_string())]), None)
            }
            "restore_backup" => {
                let fields = p["format"].as_str().map(|f| vec![("format", f.to_string())]).unwrap_or_default();
                ("POST", "/api/v1/restore".into(), Body::Upload(input()?, fields), None)
            }
            _ => return Err(Error::new("invalid_argument", format!("{op} is not available over REST; open the data directory with toolkit_svc::open"))),
        };
        let (status, answer) = self.request(method, &path, body)?;
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
