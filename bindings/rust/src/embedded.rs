use crate::{Error, Result, Transport};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// `toolkit svc embed` as a child process, one JSON line per request (docs/svc-embed-protocol.md).
pub struct EmbeddedTransport {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    /// The child's pid, as the protocol's ready line gave it.
    pub pid: u64,
}

fn command() -> Vec<String> {
    // TOOLKIT_BIN names the toolkit executable; words split on spaces ("node /x/bin/run.js").
    std::env::var("TOOLKIT_BIN").unwrap_or_else(|_| "toolkit".into()).split_whitespace().map(String::from).collect()
}

impl EmbeddedTransport {
    pub fn start(data_dir: &str, argv: Option<Vec<String>>) -> Result<Self> {
        let argv = argv.unwrap_or_else(command);
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .args(["svc", "embed", "--data-dir", data_dir])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Error::new("unavailable", format!("cannot start {}: {e}; install toolkit or set TOOLKIT_BIN", argv[0])))?;
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut stderr = child.stderr.take().expect("piped stderr");
        let mut first = String::new();
        stdout.read_line(&mut first).map_err(|e| Error::new("unavailable", e.to_string()))?;
        let ready: Value = serde_json::from_str(&first).unwrap_or(Value::Null);
        if ready["ready"] != json!(true) {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            let _ = child.wait();
            let code = ready["error"]["code"].as_str().unwrap_or("unavailable");
            let message = ready["error"]["message"].as_str().map(String::from).unwrap_or_else(|| if text.trim().is_empty() { "svc embed did not start".into() } else { text.trim().into() });
            return Err(Error::new(code, message));
        }
        // stderr is drained so a chatty child never blocks on a full pipe.
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut stderr, &mut std::io::sink());
        });
        let pid = ready["pid"].as_u64().unwrap_or(0);
        let stdin = child.stdin.take();
        Ok(EmbeddedTransport { child, stdin, stdout, next_id: 0, pid })
    }
}

impl Transport for EmbeddedTransport {
    fn call(&mut self, op: &str, params: Value) -> Result<Value> {
        let stdin = self.stdin.as_mut().ok_or_else(|| Error::new("closed", "this svc connection is closed"))?;
        self.next_id += 1;
        let line = json!({"id": self.next_id, "op": op, "params": params}).to_string() + "\n";
        let exited = |_| Error::new("unavailable", "the svc child process has exited");
        stdin.write_all(line.as_bytes()).map_err(exited)?;
        stdin.flush().map_err(exited)?;
        let mut answer = String::new();
        let n = self.stdout.read_line(&mut answer).map_err(exited)?;
        if n == 0 {
            return Err(Error::new("unavailable", "the svc child process has exited"));
        }
        let reply: Value = serde_json::from_str(&answer).map_err(|e| Error::new("internal", format!("bad answer from svc embed: {e}")))?;
        if let Some(err) = reply.get("error") {
            return Err(Error::new(err["code"].as_str().unwrap_or("internal"), err["message"].as_str().unwrap_or("")));
        }
        Ok(reply.get("result").cloned().unwrap_or(Value::Null))
    }

    fn close(&mut self) -> Result<()> {
        // Closing stdin ends the session: the child flushes its write-ahead log into Git and exits.
        if self.stdin.take().is_none() {
            return Ok(());
        }
        let status = self.child.wait().map_err(|e| Error::new("internal", e.to_string()))?;
        if status.success() { Ok(()) } else { Err(Error::new("internal", format!("svc embed exited with {status}"))) }
    }
}
