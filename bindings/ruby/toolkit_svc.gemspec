Gem::Specification.new do |s|
  s.name = "toolkit_svc"
  s.version = "0.1.0"
  s.summary = "Ruby binding for toolkit svc, the Git-versioned document database"
  s.description = "Embedded (a toolkit svc embed child process) or remote (REST) access to toolkit svc. Standard library only."
  s.authors = ["toolkit"]
  s.license = "MIT"
  s.files = Dir["lib/**/*.rb"] + ["README.md"]
  s.require_paths = ["lib"]
  s.required_ruby_version = ">= 2.7"
end
