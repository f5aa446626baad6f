use crate::{Error, Result, Transport};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `toolkit svc embed` as a child process, one JSON line per request (docs/svc-embed-protocol.md).
pub struct EmbeddedTransport {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    /// The end of what the child wrote to stderr: its last line says why it stopped.
    stderr_tail: Arc<Mutex<Vec<u8>>>,
    stderr_drained: std::thread::JoinHandle<()>,
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
        // stderr is drained so a chatty child never blocks on a full pipe; its tail is kept for the exit message.
        let stderr_tail = Arc::new(Mutex::new(Vec::new()));
        let tail = Arc::clone(&stderr_tail);
        let stderr_drained = std::thread::spawn(move || {
            let mut chunk = [0u8; 65536];
            while let Ok(n) = stderr.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                let mut t = tail.lock().unwrap_or_else(|e| e.into_inner());
                t.extend_from_slice(&chunk[..n]);
                let excess = t.len().saturating_sub(4096);
                t.drain(..excess);
            }
        });
        let pid = ready["pid"].as_u64().unwrap_or(0);
        let stdin = child.stdin.take();
        Ok(EmbeddedTransport { child, stdin, stdout, next_id: 0, stderr_tail, stderr_drained, pid })
    }

    /// "the svc child process has exited", with how it ended (exit status or signal) and its last stderr line.
    fn exited(&mut self) -> Error {
        let deadline = Instant::now() + Duration::from_secs(1);
        let mut status = None;
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(Some(s)) => {
                    status = Some(s);
                    break;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(_) => break,
            }
        }
        // Once the child is gone its stderr closes: wait briefly for the drain to take the last line.
        while !self.stderr_drained.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let tail = String::from_utf8_lossy(&self.stderr_tail.lock().unwrap_or_else(|e| e.into_inner())).into_owned();
        let why = status.map(|s| format!(" ({})", describe(s))).unwrap_or_default();
        match tail.lines().map(str::trim).rfind(|l| !l.is_empty()) {
            Some(last) => Error::new("unavailable", format!("the svc child process has exited{why}: {last}")),
            None => Error::new("unavailable", format!("the svc child process has exited{why}")),
        }
    }
}

/// "exit status 1", or "killed by SIGKILL" for a child a signal ended.
fn describe(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            const NAMES: [(i32, &str); 8] = [(1, "SIGHUP"), (2, "SIGINT"), (3, "SIGQUIT"), (6, "SIGABRT"), (9, "SIGKILL"), (11, "SIGSEGV"), (13, "SIGPIPE"), (15, "SIGTERM")];
            return match NAMES.iter().find(|(n, _)| *n == signal) {
                Some((_, name)) => format!("killed by {name}"),
                None => format!("killed by signal {signal}"),
            };
        }
    }
    match status.code() {
        Some(code) => format!("exit status {code}"),
        None => status.to_string(),
    }
}

impl Transport for EmbeddedTransport {
    fn call(&mut self, op: &str, params: Value) -> Result<Value> {
        let stdin = self.stdin.as_mut().ok_or_else(|| Error::new("closed", "this svc connection is closed"))?;
        self.next_id += 1;
        let line = json!({"id": self.next_id, "op": op, "params": params}).to_string() + "\n";
        let mut answer = String::new();
        let sent = stdin.write_all(line.as_bytes()).and_then(|_| stdin.flush());
        if sent.is_err() || !matches!(self.stdout.read_line(&mut answer), Ok(n) if n > 0) {
            return Err(self.exited());
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
