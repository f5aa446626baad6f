# frozen_string_literal: true

require "json"
require "open3"
require "net/http"
require "shellwords"
require "uri"

# toolkit svc from Ruby: a Git-versioned document database.
#
#   ToolkitSvc.open("./data") { |db| db.put("users:1", { "name" => "Ada" }) }   # embedded
#   db = ToolkitSvc.connect("http://127.0.0.1:3000")                            # remote (REST)
module ToolkitSvc
  # An error from svc: +code+ is the engine's code (+not_found+, +locked+, ...) or a SQLSTATE.
  class Error < StandardError
    attr_reader :code

    def initialize(code, message)
      super("#{code}: #{message}")
      @code = code
    end
  end

  # The API, over a transport that answers +call(op, params)+.
  class Client
    def initialize(transport)
      @transport = transport
    end

    def put(id, doc, branch: nil) = call("put", id: id, doc: doc, branch: branch)
    def get(id, branch: nil) = call("get", id: id, branch: branch)
    def delete(id, branch: nil) = call("delete", id: id, branch: branch)
    def get_as_of(id, commit: nil, time: nil, branch: nil) = call("get_as_of", id: id, commit: commit, time: time, branch: branch)
    def history(id, limit: nil, cursor: nil, branch: nil) = call("history", id: id, limit: limit, cursor: cursor, branch: branch)
    def diff(id, from, to = nil, branch: nil) = call("diff", id: id, from: from, to: to, branch: branch)
    def list_by_prefix(prefix, limit: nil, cursor: nil, branch: nil) = call("list", prefix: prefix, limit: limit, cursor: cursor, branch: branch)
    def list_by_table(table, limit: nil, cursor: nil, branch: nil) = call("list", table: table, limit: limit, cursor: cursor, branch: branch)
    def search(query, limit: nil, offset: nil, table: nil, branch: nil) = call("search", query: query, limit: limit, offset: offset, table: table, branch: branch)
    def query(sql, params = nil, branch: nil) = call("query", sql: sql, params: params, branch: branch)
    def branches = call("branches")
    def create_branch(name, from: nil) = call("create_branch", name: name, from: from)
    def remove_branch(name) = call("remove_branch", name: name)
    def export_to_directory(output, branch: nil) = call("export_to_directory", output: output, branch: branch)
    def create_backup(output, format: nil, base_commit: nil) = call("create_backup", output: output, format: format, base_commit: base_commit)
    def restore_backup(input, data_dir: nil, format: nil, force: nil) = call("restore_backup", input: input, data_dir: data_dir, format: format, force: force)
    def export_snapshot(output, refs = nil) = call("export_snapshot", output: output, refs: refs)
    def import_snapshot(input, verify: true) = call("import_snapshot", input: input, verify: verify)

    # Flushes and releases the data directory (embedded) or the connection (remote).
    def close = @transport.close

    private

    def call(op, **params)
      @transport.call(op, params.reject { |_, v| v.nil? }.transform_keys(&:to_s))
    end
  end

  # +toolkit svc embed+ as a child process, one JSON line per request (docs/svc-embed-protocol.md).
  class EmbeddedTransport
    attr_reader :pid

    def initialize(data_dir, command: nil)
      argv = (command || Shellwords.split(ENV.fetch("TOOLKIT_BIN", "toolkit"))) + ["svc", "embed", "--data-dir", data_dir.to_s]
      begin
        @stdin, @stdout, @stderr, @wait = Open3.popen3(*argv)
      rescue SystemCallError => e
        raise Error.new("unavailable", "cannot start #{argv.first}: #{e.message}; install toolkit or set TOOLKIT_BIN")
      end
      ready = begin
        JSON.parse(@stdout.gets || "{}")
      rescue JSON::ParserError
        {}
      end
      unless ready["ready"]
        err = ready["error"] || {}
        stderr = @stderr.read.to_s.strip
        @wait.value
        raise Error.new(err["code"] || "unavailable", err["message"] || (stderr.empty? ? "svc embed did not start" : stderr))
      end
      @pid = ready["pid"]
      @next_id = 0
      @lock = Mutex.new
      @closed = false
      # stderr is drained so a chatty child never blocks on a full pipe; its last lines say why it died.
      @stderr_tail = +""
      Thread.new do
        while (chunk = @stderr.readpartial(65_536) rescue nil)
          @stderr_tail = (@stderr_tail + chunk)[-2000..] || (@stderr_tail + chunk)
        end
      end
    end

    def call(op, params)
      @lock.synchronize do
        raise Error.new("closed", "this svc connection is closed") if @closed

        id = (@next_id += 1)
        begin
          @stdin.write(JSON.generate({ "id" => id, "op" => op, "params" => params }) + "\n")
          @stdin.flush
          line = @stdout.gets
        rescue IOError, SystemCallError
          line = nil
        end
        raise Error.new("unavailable", exited_message) if line.nil?

        reply = JSON.parse(line)
        raise Error.new(reply["error"]["code"], reply["error"]["message"]) if reply["error"]

        reply["result"]
      end
    end

    def close
      @lock.synchronize do
        return if @closed

        @closed = true
        @stdin.close
      end
      # The child flushes its write-ahead log into Git before it exits.
      @wait.value
    end

    private

    def exited_message
      @wait.join(1)
      last = @stderr_tail.to_s.strip.lines.last.to_s.strip
      status = @wait.value if @wait.join(0)
      why = status ? " (#{status})" : ""
      last.empty? ? "the svc child process has exited#{why}" : "the svc child process has exited#{why}: #{last}"
    end
  end

  # The same operations over a running server's REST API.
  class RemoteTransport
    def initialize(url, token: nil, timeout: 60)
      @base = URI(url.chomp("/"))
      @headers = { "Content-Type" => "application/json" }
      @headers["Authorization"] = "Bearer #{token}" if token
      @timeout = timeout
    end

    def call(op, p)
      doc = ->(suffix = "") { "/api/v1/documents/#{URI.encode_www_form_component(p["id"]).gsub("%3A", ":")}#{suffix}" }
      q = ->(*names) { names.to_h { |n| [n == "query" ? "q" : n, p[n]] }.compact }
      method, path, query, body, unwrap = case op
        when "put" then ["PUT", doc.call, q.call("branch"), p["doc"]]
        when "get" then ["GET", doc.call, q.call("branch")]
        when "delete" then ["DELETE", doc.call, q.call("branch")]
        when "get_as_of" then ["GET", doc.call("/as-of"), q.call("commit", "time", "branch")]
        when "history" then ["GET", doc.call("/history"), q.call("limit", "cursor", "branch")]
        when "diff" then ["GET", doc.call("/diff"), q.call("from", "to", "branch"), nil, "changes"]
        when "list" then ["GET", "/api/v1/documents", q.call("prefix", "table", "limit", "cursor", "branch")]
        when "search" then ["GET", "/api/v1/search", q.call("query", "limit", "offset", "table", "branch")]
        when "query" then ["POST", "/api/v1/query", {}, p]
        when "branches" then ["GET", "/api/v1/branches", {}, nil, "branches"]
        when "create_branch" then ["POST", "/api/v1/branches", {}, p]
        when "remove_branch" then ["DELETE", "/api/v1/branches/#{URI.encode_www_form_component(p["name"])}", {}]
        when "create_backup" then ["POST", "/api/v1/backup", {}, p]
        when "export_snapshot" then ["POST", "/api/v1/export", {}, p]
        # The file is uploaded; a running server imports a snapshot, and refuses a restore (it would
        # replace the database under its clients) with a "conflict" error saying how to restore.
        when "import_snapshot" then ["POST", "/api/v1/import", {}, Upload.new(p["input"], { "verify" => p["verify"] ? "true" : "false" })]
        when "restore_backup" then ["POST", "/api/v1/restore", {}, Upload.new(p["input"], p["format"] ? { "format" => p["format"] } : {})]
        else raise Error.new("invalid_argument", "#{op} is not available over REST; open the data directory with ToolkitSvc.open")
      end
      uri = @base.dup
      uri.path = @base.path + path
      uri.query = URI.encode_www_form(query) unless query.empty?
      request(op, method, uri, body, unwrap)
    end

    def close; end

    private

    Upload = Struct.new(:path, :fields)

    def request(op, method, uri, body, unwrap)
      req = Net::HTTPGenericRequest.new(method, !body.nil?, true, uri.request_uri, @headers)
      if body.is_a?(Upload)
        file = begin
          File.binread(body.path)
        rescue SystemCallError => e
          raise Error.new("invalid_argument", "cannot read #{body.path}: #{e.message}")
        end
        form = body.fields.map { |k, v| [k, v] } + [["file", file, { filename: File.basename(body.path) }]]
        req.set_form(form, "multipart/form-data")
      elsif !body.nil?
        req.body = JSON.generate(body)
      end
      res = Net::HTTP.start(uri.host, uri.port, open_timeout: @timeout, read_timeout: @timeout) { |http| http.request(req) }
      answer = res.body.to_s.empty? ? nil : JSON.parse(res.body)
      if res.code.to_i >= 400
        err = (answer.is_a?(Hash) && answer["error"]) || {}
        code = err["sqlstate"] || err["code"] || "internal"
        return nil if res.code == "404" && code == "not_found" && %w[get get_as_of].include?(op)
        return { "existed" => false } if res.code == "404" && code == "not_found" && op == "delete"

        raise Error.new(code, err["message"] || "HTTP #{res.code}")
      end
      unwrap ? answer[unwrap] : answer
    rescue SystemCallError, Net::OpenTimeout, Net::ReadTimeout, SocketError => e
      raise Error.new("unavailable", "cannot reach svc at #{@base}: #{e.message}")
    end
  end

  # Opens a data directory in a +toolkit svc embed+ child process; with a block, closes it after.
  def self.open(data_dir, command: nil)
    client = Client.new(EmbeddedTransport.new(data_dir, command: command))
    return client unless block_given?

    begin
      yield client
    ensure
      client.close
    end
  end

  # Reaches a running +toolkit svc server+ over its REST API.
  def self.connect(url, token: nil, timeout: 60)
    Client.new(RemoteTransport.new(url, token: token, timeout: timeout))
  end
end
