"""toolkit svc from Python: a Git-versioned document database.

    import toolkit_svc
    with toolkit_svc.open("./data") as db:          # embedded: a `toolkit svc embed` child process
        db.put("users:1", {"name": "Ada"})
        print(db.get("users:1"))

    db = toolkit_svc.connect("http://127.0.0.1:3000")  # remote: a running `toolkit svc server`
"""

from ._client import Client, Pipeline
from ._embedded import open
from ._errors import SvcError
from ._remote import connect

__all__ = ["Client", "Pipeline", "SvcError", "connect", "open"]
__version__ = "0.1.0"
