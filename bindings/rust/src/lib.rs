//! toolkit svc from Rust: a Git-versioned document database.
//!
//! ```no_run
//! let db = toolkit_svc::open("./data")?;               // embedded: a `toolkit svc embed` child
//! db.put("users:1", serde_json::json!({"name": "Ada"}))?;
//! let remote = toolkit_svc::connect("http://127.0.0.1:3000", None)?; // remote: REST
//! # Ok::<(), toolkit_svc::Error>(())
//! ```

mod embedded;
mod remote;

use serde_json::{json, Map, Value};
use std::cell::RefCell;
use std::fmt;

pub use embedded::EmbeddedTransport;
pub use remote::RemoteTransport;

/// An error from svc: `code` is the engine's code (`not_found`, `locked`, ...) or a SQLSTATE.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    pub code: String,
    pub message: String,
}

impl Error {
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Error { code: code.to_string(), message: message.into() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// How a client reaches svc: one call per operation of the embedded protocol.
pub trait Transport {
    fn call(&mut self, op: &str, params: Value) -> Result<Value>;
    fn close(&mut self) -> Result<()>;
}

/// A connection to svc, embedded or remote. Dropping it closes it (flushing the data directory).
pub struct Client {
    // Calls take `&self` so a client is easy to pass around; one call at a time holds the transport.
    transport: RefCell<Box<dyn Transport>>,
    closed: bool,
}

/// Optional arguments of the calls that take them; unset ones are left out.
#[derive(Default, Clone, Debug)]
pub struct Opts {
    pub branch: Option<String>,
    pub limit: Option<u64>,
    pub offset: Option<u64>,
    pub cursor: Option<String>,
    pub table: Option<String>,
}

impl Opts {
    pub fn branch(name: &str) -> Self {
        Opts { branch: Some(name.to_string()), ..Default::default() }
    }
    pub fn limit(n: u64) -> Self {
        Opts { limit: Some(n), ..Default::default() }
    }
    fn into_params(self, mut base: Map<String, Value>) -> Value {
        if let Some(b) = self.branch { base.insert("branch".into(), json!(b)); }
        if let Some(n) = self.limit { base.insert("limit".into(), json!(n)); }
        if let Some(n) = self.offset { base.insert("offset".into(), json!(n)); }
        if let Some(c) = self.cursor { base.insert("cursor".into(), json!(c)); }
        if let Some(t) = self.table { base.insert("table".into(), json!(t)); }
        Value::Object(base)
    }
}

fn obj(pairs: &[(&str, Value)]) -> Map<String, Value> {
    pairs.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.to_string(), v.clone())).collect()
}

impl Client {
    pub fn new(transport: Box<dyn Transport>) -> Self {
        Client { transport: RefCell::new(transport), closed: false }
    }

    fn call(&self, op: &str, params: Value) -> Result<Value> {
        self.transport.borrow_mut().call(op, params)
    }

    /// Stores `doc` as the current version of `id` (one Git commit).
    pub fn put(&self, id: &str, doc: Value) -> Result<Value> {
        self.put_with(id, doc, Opts::default())
    }
    pub fn put_with(&self, id: &str, doc: Value, o: Opts) -> Result<Value> {
        self.call("put", o.into_params(obj(&[("id", json!(id)), ("doc", doc)])))
    }
    /// The current document, or `None` when there is none.
    pub fn get(&self, id: &str) -> Result<Option<Value>> {
        self.get_with(id, Opts::default())
    }
    pub fn get_with(&self, id: &str, o: Opts) -> Result<Option<Value>> {
        self.call("get", o.into_params(obj(&[("id", json!(id))]))).map(|v| if v.is_null() { None } else { Some(v) })
    }
    pub fn delete(&self, id: &str) -> Result<Value> {
        self.call("delete", json!({"id": id}))
    }
    /// The document as it was at a commit, or `None`.
    pub fn get_as_of_commit(&self, id: &str, commit: &str) -> Result<Option<Value>> {
        self.call("get_as_of", json!({"id": id, "commit": commit})).map(|v| if v.is_null() { None } else { Some(v) })
    }
    /// The document as it was at a time (RFC 3339 or epoch milliseconds as text), or `None`.
    pub fn get_as_of_time(&self, id: &str, time: &str) -> Result<Option<Value>> {
        self.call("get_as_of", json!({"id": id, "time": time})).map(|v| if v.is_null() { None } else { Some(v) })
    }
    /// Versions newest first: `{"versions": [...], "nextCursor"?}`.
    pub fn history(&self, id: &str, o: Opts) -> Result<Value> {
        self.call("history", o.into_params(obj(&[("id", json!(id))])))
    }
    pub fn diff(&self, id: &str, from: &str, to: Option<&str>) -> Result<Value> {
        self.call("diff", Value::Object(obj(&[("id", json!(id)), ("from", json!(from)), ("to", to.map_or(Value::Null, |t| json!(t)))])))
    }
    pub fn list_by_prefix(&self, prefix: &str, o: Opts) -> Result<Value> {
        self.call("list", o.into_params(obj(&[("prefix", json!(prefix))])))
    }
    pub fn list_by_table(&self, table: &str, o: Opts) -> Result<Value> {
        self.call("list", o.into_params(obj(&[("table", json!(table))])))
    }
    /// Full-text search: `{"total", "hits": [{"id", "score", "doc"}]}`.
    pub fn search(&self, query: &str, o: Opts) -> Result<Value> {
        self.call("search", o.into_params(obj(&[("query", json!(query))])))
    }
    /// SQL (svc's subset): `{"columns": [...], "rows": [[...]], "command"}`.
    pub fn query(&self, sql: &str, params: Vec<Value>) -> Result<Value> {
        self.call("query", json!({"sql": sql, "params": params}))
    }
    pub fn branches(&self) -> Result<Value> {
        self.call("branches", json!({}))
    }
    pub fn create_branch(&self, name: &str, from: Option<&str>) -> Result<Value> {
        self.call("create_branch", Value::Object(obj(&[("name", json!(name)), ("from", from.map_or(Value::Null, |f| json!(f)))])))
    }
    pub fn remove_branch(&self, name: &str) -> Result<Value> {
        self.call("remove_branch", json!({"name": name}))
    }
    pub fn export_to_directory(&self, output: &str) -> Result<Value> {
        self.call("export_to_directory", json!({"output": output}))
    }
    /// A full backup (`format`: "tar.gz" or "bundle"), or an incremental bundle after `base_commit`.
    pub fn create_backup(&self, output: &str, format: Option<&str>, base_commit: Option<&str>) -> Result<Value> {
        let none = |o: Option<&str>| o.map_or(Value::Null, |s| json!(s));
        self.call("create_backup", Value::Object(obj(&[("output", json!(output)), ("format", none(format)), ("base_commit", none(base_commit))])))
    }
    /// Restores a backup into `data_dir` (embedded: a new directory, never the open one). Remote, the
    /// file is uploaded and a running server refuses it with a `conflict` error saying how to restore.
    pub fn restore_backup(&self, input: &str, data_dir: &str) -> Result<Value> {
        self.call("restore_backup", json!({"input": input, "data_dir": data_dir}))
    }
    pub fn export_snapshot(&self, output: &str, refs: &[&str]) -> Result<Value> {
        self.call("export_snapshot", json!({"output": output, "refs": refs}))
    }
    pub fn import_snapshot(&self, input: &str, verify: bool) -> Result<Value> {
        self.call("import_snapshot", json!({"input": input, "verify": verify}))
    }

    /// Flushes and releases the data directory (embedded) or the connection (remote).
    pub fn close(mut self) -> Result<()> {
        self.closed = true;
        self.transport.get_mut().close()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if !self.closed {
            let _ = self.transport.get_mut().close();
        }
    }
}

/// Opens a data directory in a `toolkit svc embed` child process (no ports are opened).
pub fn open(data_dir: &str) -> Result<Client> {
    Ok(Client::new(Box::new(EmbeddedTransport::start(data_dir, None)?)))
}

/// Reaches a running `toolkit svc server` over its REST API.
pub fn connect(url: &str, token: Option<&str>) -> Result<Client> {
    Ok(Client::new(Box::new(RemoteTransport::new(url, token)?)))
}
