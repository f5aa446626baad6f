"""The Python binding against the built toolkit (TOOLKIT_BIN), embedded and remote."""

import atexit
import gc
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import toolkit_svc  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
BIN = os.environ.setdefault("TOOLKIT_BIN", str(ROOT / "bin" / "run.js"))


# Every scratch directory of the run under one, removed at exit (homes, data directories, cwd).
SCRATCH = tempfile.mkdtemp(prefix="svc-py-tests-")
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)


def scratch(prefix):
    return tempfile.mkdtemp(prefix=prefix, dir=SCRATCH)


def env():
    home = scratch("home-")
    return {**os.environ, "HOME": home, "TOOLKIT_CONFIG_DIR": home, "XDG_CONFIG_HOME": home, "NO_COLOR": "1"}


class Server:
    """`toolkit svc server` on free ports, REST and Redis."""

    def __init__(self, data_dir):
        self.proc = subprocess.Popen(
            [BIN, "svc", "server", "--data-dir", data_dir, "--http-port", "0", "--redis-port", "0", "--disable-sql", "--format", "json"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env(), text=True,
        )
        ready = json.loads(self.proc.stdout.readline())
        self.url = f"http://127.0.0.1:{ready['rest']}"
        self.redis_port = ready["redis"]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)
        self.proc.stdout.close()


class Calls:
    """One round trip of every API call; run against both transports."""

    db: toolkit_svc.Client

    def test_round_trip(self):
        db = self.db
        r = db.put("users:1", {"name": "Ada", "city": "Oslo"})
        self.assertEqual(r["id"], "users:1")
        self.assertEqual(db.get("users:1"), {"id": "users:1", "name": "Ada", "city": "Oslo"})
        self.assertIsNone(db.get("users:404"))
        db.put("users:1", {"name": "Ada Lovelace", "city": "London"})
        db.put("users:2", {"name": "Ann", "city": "Oslo"})

        versions = db.history("users:1")["versions"]
        self.assertEqual([v["doc"]["name"] for v in versions], ["Ada Lovelace", "Ada"])
        self.assertEqual(len(db.history("users:1", limit=1)["versions"]), 1)
        first = versions[-1]["commit"]
        self.assertEqual(db.get_as_of("users:1", commit=first)["name"], "Ada")
        self.assertEqual(db.get_as_of("users:1", time=versions[0]["time"])["name"], "Ada Lovelace")
        changes = db.diff("users:1", first)
        self.assertIn({"op": "change", "path": "/name", "before": "Ada", "after": "Ada Lovelace"}, changes)

        self.assertEqual([d["id"] for d in db.list_by_table("users")["documents"]], ["users:1", "users:2"])
        self.assertEqual([d["id"] for d in db.list_by_prefix("users:2")["documents"]], ["users:2"])
        hits = db.search("oslo")
        self.assertEqual([h["id"] for h in hits["hits"]], ["users:2"])

        rows = db.query("SELECT name FROM users WHERE city = $1", ["Oslo"])
        self.assertEqual(rows["rows"], [["Ann"]])

        db.create_branch("dev")
        db.put("users:3", {"name": "Dev only"}, branch="dev")
        self.assertIsNone(db.get("users:3"))
        self.assertEqual(db.get("users:3", branch="dev")["name"], "Dev only")
        self.assertIn("dev", [b["name"] for b in db.branches()])
        db.remove_branch("dev")
        self.assertNotIn("dev", [b["name"] for b in db.branches()])

        self.assertTrue(db.delete("users:2")["existed"])
        self.assertIsNone(db.get("users:2"))
        self.assertFalse(db.delete("users:2")["existed"])

    def test_errors_are_svc_errors(self):
        with self.assertRaises(toolkit_svc.SvcError) as e:
            self.db.put("users:1", ["not", "an", "object"])
        self.assertIn(e.exception.code, ("invalid_document", "invalid_json"))
        with self.assertRaises(toolkit_svc.SvcError) as e:
            self.db.query("SELEC nonsense")
        self.assertEqual(e.exception.code, "42601")
        with self.assertRaises(toolkit_svc.SvcError) as e:
            self.db.put("_pg_schema:x", {"a": 1})
        self.assertEqual(e.exception.code, "reserved")


class EmbeddedTest(Calls, unittest.TestCase):
    def setUp(self):
        self.dir = scratch("data-")
        self.db = toolkit_svc.open(os.path.join(self.dir, "data"))

    def tearDown(self):
        self.db.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_locked_directory(self):
        with self.assertRaises(toolkit_svc.SvcError) as e:
            toolkit_svc.open(os.path.join(self.dir, "data"))
        self.assertEqual(e.exception.code, "locked")
        self.assertIn(f"pid {self.db._transport.pid}", e.exception.message)
        self.assertIn("connect(url)", e.exception.message)

    def test_pipelined_gets_with_a_damaged_document_among_them(self):
        for i in range(3):
            self.db.put(f"dmg:{i}", {"n": i})
        self.db.close()
        # Lose the stored object of dmg:1 (as a disk error or a bad copy would): unpack, then delete it.
        repo = os.path.join(self.dir, "data", "repo")
        tree = subprocess.run(["git", "-C", repo, "ls-tree", "-r", "main"], capture_output=True, text=True, check=True).stdout
        blob = next(line.split()[2] for line in tree.splitlines() if line.endswith("/1.json") and "\tdmg/" in line)
        packs = os.path.join(repo, "objects", "pack")
        # Every pack read before any is removed: the writes may have left more than one.
        datas = []
        for name in [n for n in os.listdir(packs) if n.endswith(".pack")]:
            with open(os.path.join(packs, name), "rb") as f:
                datas.append(f.read())
        for n in os.listdir(packs):
            os.remove(os.path.join(packs, n))
        for data in datas:
            subprocess.run(["git", "-C", repo, "unpack-objects", "-q"], input=data, check=True)
        os.remove(os.path.join(repo, "objects", blob[:2], blob[2:]))
        self.db = toolkit_svc.open(os.path.join(self.dir, "data"))
        with self.db.pipeline() as p:
            got = [p.get(f"dmg:{i}") for i in range(3)]
        self.assertEqual(got[0].result(), {"id": "dmg:0", "n": 0})
        self.assertEqual(got[2].result(), {"id": "dmg:2", "n": 2})
        with self.assertRaises(toolkit_svc.SvcError) as e:
            got[1].result()
        self.assertEqual(e.exception.code, "damaged")
        self.assertIn(blob, e.exception.message)

    def test_backup_restore_and_snapshot(self):
        db = self.db
        for i in range(20):
            db.put(f"t:{i}", {"n": i})
        manifest = db.create_backup(os.path.join(self.dir, "full.tar.gz"))
        self.assertEqual(manifest["type"], "full")
        self.assertEqual(manifest["documents"], 20)
        restored = db.restore_backup(os.path.join(self.dir, "full.tar.gz"), data_dir=os.path.join(self.dir, "restored"))
        self.assertEqual(restored["documents"], 20)
        with toolkit_svc.open(os.path.join(self.dir, "restored")) as copy:
            self.assertEqual(copy.get("t:7"), {"id": "t:7", "n": 7})
        snap = db.export_snapshot(os.path.join(self.dir, "main.bundle"), ["main"])
        self.assertEqual([r["name"] for r in snap["refs"]], ["refs/heads/main"])
        exported = db.export_to_directory(os.path.join(self.dir, "export"))
        self.assertEqual(exported["documents"], 20)

    def test_pipeline(self):
        with self.db.pipeline() as p:
            puts = [p.put(f"p:{i}", {"n": i}) for i in range(500)]
            got = p.get("p:499")
        self.assertTrue(all(f.result()["id"] for f in puts))
        self.assertEqual(got.result(), {"id": "p:499", "n": 499})

    def test_long_read_pipeline_keeps_every_answer_and_the_order_of_writes(self):
        # More gets than one get_many carries, so slices leave while later gets are still gathered.
        with self.db.pipeline() as p:
            for i in range(1200):
                p.put(f"long:{i}", {"n": i})
            before = [p.get(f"long:{i}") for i in range(1200)]
            p.put("long:7", {"n": "changed"})
            after = [p.get(f"long:{i}") for i in (7, 8)]
            missing = p.get("long:none")
        self.assertEqual([f.result()["n"] for f in before], list(range(1200)))
        self.assertEqual([f.result()["n"] for f in after], ["changed", 8])
        self.assertIsNone(missing.result())
        self.assertIsNone(before[0].exception())
        # Decoding a batch pauses the garbage collector; it must be running again afterwards.
        self.assertTrue(gc.isenabled())
        gc.disable()
        try:
            with self.db.pipeline() as p:
                again = p.get("long:9")
            self.assertEqual(again.result()["n"], 9)
            self.assertFalse(gc.isenabled(), "a collector the caller turned off stays off")
        finally:
            gc.enable()

    def test_pipelined_gets_with_a_bad_id_among_them(self):
        self.db.put("g:1", {"n": 1})
        with self.db.pipeline() as p:
            good = [p.get("g:1") for _ in range(5)]
            bad = p.get("bad/../x:1")
            more = [p.get("g:1"), p.get("g:404")]
        self.assertEqual([f.result() for f in good], [{"id": "g:1", "n": 1}] * 5)
        with self.assertRaises(toolkit_svc.SvcError) as e:
            bad.result()
        self.assertEqual(e.exception.code, "invalid_id")
        self.assertEqual([f.result() for f in more], [{"id": "g:1", "n": 1}, None])
        self.assertEqual(len(bad[0]._split), 8, "only the gets of the batch are resent, one each")
        with self.db.pipeline() as p:
            number = p.get(17)  # type: ignore[arg-type]
            text = p.get("g:1")
        with self.assertRaises(toolkit_svc.SvcError) as e:
            number.result()
        self.assertEqual(e.exception.code, "invalid_argument")
        self.assertEqual(text.result(), {"id": "g:1", "n": 1})

    def test_threads_share_a_pipeline_and_the_client_and_every_get_keeps_its_own_answer(self):
        # Pipelined gets take their place in a batch without a lock; several threads gathering into
        # one pipeline while others write and read directly must still see each get answered for its id.
        with self.db.pipeline() as p:
            for i in range(300):
                p.put(f"th:{i}", {"n": i})
        pipe = self.db.pipeline()
        results: list = []
        errors: list = []

        def reader(offset: int) -> None:
            try:
                got = [(i, pipe.get(f"th:{(i + offset) % 300}")) for i in range(3000)]
                results.extend(((i + offset) % 300, f) for i, f in got)
            except BaseException as e:  # noqa: BLE001 - reported by the test thread
                errors.append(e)

        def writer() -> None:
            try:
                for i in range(50):
                    self.db.put(f"other:{i}", {"n": i})
                    self.assertEqual(self.db.get(f"other:{i}"), {"id": f"other:{i}", "n": i})
            except BaseException as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=reader, args=(k * 7,)) for k in range(3)] + [threading.Thread(target=writer)]
        interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)  # threads switch every few bytecodes, inside the gets too
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            sys.setswitchinterval(interval)
        with pipe:
            pass
        self.assertEqual(errors, [])
        self.assertEqual(len(results), 9000)
        for n, f in results:
            self.assertEqual(f.result(), {"id": f"th:{n}", "n": n})

    def test_a_get_that_missed_its_batch_is_asked_for_alone(self):
        # What a thread that claimed its place just before another thread sent the batch leaves
        # behind (the race is too short to hit on purpose): a get past what the batch sent.
        from toolkit_svc._embedded import _Got

        self.db.put("late:1", {"n": 1})
        self.db.put("late:2", {"n": 2})
        with self.db.pipeline() as p:
            first = p.get("late:1")
            batch = first[0]
            hole = batch.claim()  # claimed, its id not stored yet
            after = batch.claim()
            self.db.get("late:1")  # another call sends the batch meanwhile
            batch.ids[hole] = "late:2"
            batch.ids[after] = "late:404"
            late, missing = _Got((batch, hole)), _Got((batch, after))
        self.assertEqual(first.result(), {"id": "late:1", "n": 1})
        self.assertEqual(late.result(), {"id": "late:2", "n": 2})
        self.assertTrue(late.done())
        self.assertIsNone(missing.result())
        self.assertIsNone(missing.exception())

    def test_a_killed_child_is_named_in_the_error(self):
        self.db.put("k:1", {"n": 1})
        os.kill(self.db._transport.pid, signal.SIGKILL)
        with self.assertRaises(toolkit_svc.SvcError) as e:
            self.db.get("k:1")
        self.assertEqual(e.exception.code, "unavailable")
        self.assertTrue(e.exception.message.startswith("the svc child process has exited (killed by SIGKILL)"), e.exception.message)

    def test_embed_then_redis_cli_reads_it(self):
        self.db.put("kv:greeting", {"text": "hello from python"})
        self.db.close()
        server = Server(os.path.join(self.dir, "data"))
        try:
            out = subprocess.run(["redis-cli", "-p", str(server.redis_port), "HGET", "kv:greeting", "text"], capture_output=True, text=True, timeout=30)
            self.assertEqual(out.stdout.strip(), "hello from python")
        finally:
            server.stop()
        self.db = toolkit_svc.open(os.path.join(self.dir, "data"))


class CrossBindingTest(unittest.TestCase):
    """One data directory written and read through Python, Ruby and redis-cli in turn."""

    def test_python_writes_ruby_reads_and_writes_back_redis_cli_sees_both(self):
        if shutil.which("ruby") is None:
            self.skipTest("ruby is not installed (scripts/install-peers.sh installs it)")
        data = os.path.join(scratch("cross-"), "data")
        with toolkit_svc.open(data) as db:
            db.put("notes:1", {"text": "written by python", "n": 9007199254740991})
        ruby = (
            'require "toolkit_svc"\n'
            'ToolkitSvc.open(ARGV[0]) do |db|\n'
            '  doc = db.get("notes:1")\n'
            '  db.put("notes:2", { "text" => "ruby read: #{doc["text"]}", "n" => doc["n"] })\n'
            'end\n'
        )
        out = subprocess.run(
            ["ruby", "-I", str(ROOT / "bindings" / "ruby" / "lib"), "-e", ruby, data],
            capture_output=True, text=True, timeout=120, env=os.environ,
        )
        self.assertEqual(out.returncode, 0, out.stderr)
        with toolkit_svc.open(data) as db:
            self.assertEqual(db.get("notes:2"), {"id": "notes:2", "text": "ruby read: written by python", "n": 9007199254740991})
        server = Server(data)
        try:
            got = [
                subprocess.run(["redis-cli", "-p", str(server.redis_port), "HGET", key, "text"], capture_output=True, text=True, timeout=30).stdout.strip()
                for key in ("notes:1", "notes:2")
            ]
            self.assertEqual(got, ["written by python", "ruby read: written by python"])
        finally:
            server.stop()


class RemoteTest(Calls, unittest.TestCase):
    def setUp(self):
        self.dir = scratch("data-")
        self.server = Server(os.path.join(self.dir, "data"))
        self.db = toolkit_svc.connect(self.server.url)

    def tearDown(self):
        self.db.close()
        self.server.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_backup_snapshot_import_and_a_refused_restore(self):
        db = self.db
        db.put("m:1", {"on": "main"})
        db.create_branch("feature")
        for i in range(5):
            db.put(f"f:{i}", {"n": i}, branch="feature")
        manifest = db.create_backup("full.tar.gz")
        self.assertEqual(manifest["type"], "full")
        snap = db.export_snapshot("feature.bundle", ["feature"])
        self.assertEqual([r["name"] for r in snap["refs"]], ["refs/heads/feature"])
        bundle = snap["path"]
        other = Server(os.path.join(self.dir, "other"))
        try:
            with toolkit_svc.connect(other.url) as remote:
                remote.import_snapshot(bundle)
                self.assertEqual(remote.get("f:3", branch="feature"), {"id": "f:3", "n": 3})
                with self.assertRaises(toolkit_svc.SvcError) as e:
                    remote.restore_backup(manifest["path"])
                self.assertEqual(e.exception.code, "conflict")
                self.assertIn("toolkit svc restore", str(e.exception))
                self.assertEqual(remote.get("f:3", branch="feature"), {"id": "f:3", "n": 3})
        finally:
            other.stop()

    def test_server_down(self):
        db = toolkit_svc.connect("http://127.0.0.1:9")
        with self.assertRaises(toolkit_svc.SvcError) as e:
            db.get("users:1")
        self.assertEqual(e.exception.code, "unavailable")


class ReadmeTest(unittest.TestCase):
    def test_readme_example_runs(self):
        readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
        code = readme.split("```python\n", 1)[1].split("```", 1)[0]
        cwd = scratch("readme-")
        out = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120,
                             env={**env(), "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("Ada", out.stdout)


if __name__ == "__main__":
    unittest.main()
