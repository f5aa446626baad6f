use serde_json::json;
use toolkit_svc::Opts;

fn main() -> Result<(), toolkit_svc::Error> {
    let db = toolkit_svc::open("./data")?;
    db.put("users:1", json!({"name": "Ada", "city": "Oslo"}))?;
    db.put("users:1", json!({"name": "Ada Lovelace", "city": "London"}))?;
    println!("{}", db.get("users:1")?.unwrap()["name"]);
    println!("{}", db.history("users:1", Opts::limit(10))?["versions"].as_array().unwrap().len());
    println!("{} {}", db.search("london", Opts::default())?["total"], db.query("SELECT name FROM users", vec![])?["rows"]);
    db.create_backup("./backup.tar.gz", None, None)?;
    db.close()
}
