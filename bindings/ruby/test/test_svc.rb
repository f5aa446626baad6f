# frozen_string_literal: true

require "minitest/autorun"
require "tmpdir"
require "fileutils"
require "json"
$LOAD_PATH.unshift File.expand_path("../lib", __dir__)
require "toolkit_svc"

ROOT = File.expand_path("../../..", __dir__)
ENV["TOOLKIT_BIN"] ||= File.join(ROOT, "bin", "run.js")

HOMES = []
Minitest.after_run { HOMES.each { |h| FileUtils.rm_rf(h) } }

def isolated_env
  home = Dir.mktmpdir("svc-rb-home-")
  HOMES << home
  { "HOME" => home, "TOOLKIT_CONFIG_DIR" => home, "XDG_CONFIG_HOME" => home, "NO_COLOR" => "1" }
end

# `toolkit svc server` on free ports (REST and Redis).
class Server
  attr_reader :url, :redis_port

  def initialize(data_dir)
    @out, @wait = Open3.popen2(isolated_env, ENV["TOOLKIT_BIN"], "svc", "server", "--data-dir", data_dir, "--http-port", "0",
                               "--redis-port", "0", "--disable-sql", "--format", "json", err: File::NULL)[1..2]
    ready = JSON.parse(@out.gets)
    @url = "http://127.0.0.1:#{ready["rest"]}"
    @redis_port = ready["redis"]
  end

  def stop
    Process.kill("TERM", @wait.pid)
    @wait.value
  end
end

module RoundTrip
  def test_round_trip
    db = @db
    assert_equal "users:1", db.put("users:1", { "name" => "Ada", "city" => "Oslo" })["id"]
    assert_equal({ "id" => "users:1", "name" => "Ada", "city" => "Oslo" }, db.get("users:1"))
    assert_nil db.get("users:404")
    db.put("users:1", { "name" => "Ada Lovelace", "city" => "London" })
    db.put("users:2", { "name" => "Ann", "city" => "Oslo" })
    versions = db.history("users:1")["versions"]
    assert_equal ["Ada Lovelace", "Ada"], versions.map { |v| v["doc"]["name"] }
    first = versions.last["commit"]
    assert_equal "Ada", db.get_as_of("users:1", commit: first)["name"]
    assert_includes db.diff("users:1", first), { "op" => "change", "path" => "/name", "before" => "Ada", "after" => "Ada Lovelace" }
    assert_equal %w[users:1 users:2], db.list_by_table("users")["documents"].map { |d| d["id"] }
    assert_equal %w[users:2], db.list_by_prefix("users:2")["documents"].map { |d| d["id"] }
    assert_equal %w[users:2], db.search("oslo")["hits"].map { |h| h["id"] }
    assert_equal [["Ann"]], db.query("SELECT name FROM users WHERE city = $1", ["Oslo"])["rows"]
    db.create_branch("dev")
    db.put("users:3", { "name" => "Dev only" }, branch: "dev")
    assert_nil db.get("users:3")
    assert_includes db.branches.map { |b| b["name"] }, "dev"
    db.remove_branch("dev")
    assert db.delete("users:2")["existed"]
    refute db.delete("users:2")["existed"]
  end

  def test_errors
    e = assert_raises(ToolkitSvc::Error) { @db.query("SELEC nonsense") }
    assert_equal "42601", e.code
    e = assert_raises(ToolkitSvc::Error) { @db.put("_pg_schema:x", { "a" => 1 }) }
    assert_equal "reserved", e.code
  end
end

class EmbeddedTest < Minitest::Test
  include RoundTrip

  def setup
    @dir = Dir.mktmpdir("svc-rb-")
    @db = ToolkitSvc.open(File.join(@dir, "data"))
  end

  def teardown
    @db.close
    FileUtils.rm_rf(@dir)
  end

  def test_locked_directory
    e = assert_raises(ToolkitSvc::Error) { ToolkitSvc.open(File.join(@dir, "data")) }
    assert_equal "locked", e.code
    assert_includes e.message, "connect(url)"
  end

  def test_a_killed_child_is_named_in_the_error
    @db.put("k:1", { "n" => 1 })
    Process.kill("KILL", @db.instance_variable_get(:@transport).pid)
    e = assert_raises(ToolkitSvc::Error) { @db.get("k:1") }
    assert_equal "unavailable", e.code
    assert_includes e.message, "the svc child process has exited (pid"
    assert_includes e.message, "SIGKILL"
  end

  def test_backup_and_restore
    5.times { |i| @db.put("t:#{i}", { "n" => i }) }
    manifest = @db.create_backup(File.join(@dir, "full.tar.gz"))
    assert_equal "full", manifest["type"]
    @db.restore_backup(File.join(@dir, "full.tar.gz"), data_dir: File.join(@dir, "restored"))
    ToolkitSvc.open(File.join(@dir, "restored")) { |copy| assert_equal({ "id" => "t:3", "n" => 3 }, copy.get("t:3")) }
  end

  def test_written_in_ruby_read_by_redis_cli
    @db.put("kv:greeting", { "text" => "hello from ruby" })
    @db.close
    server = Server.new(File.join(@dir, "data"))
    begin
      out, = Open3.capture2("redis-cli", "-p", server.redis_port.to_s, "HGET", "kv:greeting", "text")
      assert_equal "hello from ruby", out.strip
    ensure
      server.stop
    end
    @db = ToolkitSvc.open(File.join(@dir, "data"))
  end
end

class RemoteTest < Minitest::Test
  include RoundTrip

  def setup
    @dir = Dir.mktmpdir("svc-rb-")
    @server = Server.new(File.join(@dir, "data"))
    @db = ToolkitSvc.connect(@server.url)
  end

  def teardown
    @server.stop
    FileUtils.rm_rf(@dir)
  end

  def test_snapshot_import_and_a_refused_restore
    @db.put("m:1", { "on" => "main" })
    @db.create_branch("feature")
    3.times { |i| @db.put("f:#{i}", { "n" => i }, branch: "feature") }
    backup = @db.create_backup("full.tar.gz")
    snap = @db.export_snapshot("feature.bundle", ["feature"])
    other = Server.new(File.join(@dir, "other"))
    begin
      remote = ToolkitSvc.connect(other.url)
      remote.import_snapshot(snap["path"])
      assert_equal({ "id" => "f:2", "n" => 2 }, remote.get("f:2", branch: "feature"))
      e = assert_raises(ToolkitSvc::Error) { remote.restore_backup(backup["path"]) }
      assert_equal "conflict", e.code
      assert_includes e.message, "toolkit svc restore"
      assert_equal({ "id" => "f:2", "n" => 2 }, remote.get("f:2", branch: "feature"))
    ensure
      other.stop
    end
  end

  def test_server_down
    e = assert_raises(ToolkitSvc::Error) { ToolkitSvc.connect("http://127.0.0.1:9").get("users:1") }
    assert_equal "unavailable", e.code
  end
end

class ReadmeTest < Minitest::Test
  def test_readme_example_runs
    code = File.read(File.expand_path("../README.md", __dir__))[/```ruby\n(.*?)```/m, 1]
    Dir.mktmpdir("svc-rb-readme-") do |dir|
      out, status = Open3.capture2e(isolated_env.merge("TOOLKIT_BIN" => ENV["TOOLKIT_BIN"]), "ruby", "-I", File.expand_path("../lib", __dir__), "-e", code, chdir: dir)
      assert status.success?, out
      assert_includes out, "Ada"
    end
  end
end
