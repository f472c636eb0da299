# Consumes user data the way cloud-init's init stage does at boot (Init._consume_userdata: its
# UserDataProcessor, its default part handlers, any #part-handler parts), with every path under a
# scratch cloud directory, and prints what it logged as JSON lines of {level, logger, message}.
# argv: USER_DATA_FILE CLOUD_DIR
import json
import logging
import os
import sys

from cloudinit import helpers, stages
from cloudinit.settings import PER_INSTANCE
from cloudinit.sources.DataSourceNone import DataSourceNone

records = []


class Collect(logging.Handler):
    def emit(self, record):
        message = record.getMessage()
        if record.exc_info:
            message += "\n" + logging.Formatter().formatException(record.exc_info)
        records.append({"level": record.levelname, "logger": record.name, "message": message})


logging.getLogger().addHandler(Collect())
logging.getLogger().setLevel(logging.DEBUG)

user_data, cloud_dir = sys.argv[1], sys.argv[2]
init = stages.Init()
# Set, never derived: Init derives paths from the host's /etc/cloud (and /var/lib/cloud) when they
# are unset, and anything that resets them (e.g. _reflect_cur_instance) would write to the host.
init._cfg = {"system_info": {"distro": "debian"}}
init._paths = helpers.Paths({"cloud_dir": cloud_dir, "run_dir": os.path.join(cloud_dir, "run")})
datasource = DataSourceNone({}, None, init._paths)
with open(user_data, "rb") as f:
    datasource.userdata_raw = f.read()
init.datasource = datasource
init._paths.datasource = datasource
# The instance's directories exist at boot (cloud-init makes them before it consumes user data);
# Python caches a missing import directory, so a part handler could not be imported without them.
for sub in ("handlers", "scripts", "sem"):
    os.makedirs(init._paths.get_ipath(sub), exist_ok=True)
if init.paths.cloud_dir != cloud_dir:
    sys.exit("cloud-init paths left the scratch directory")
init._consume_userdata(PER_INSTANCE)
print(json.dumps(records))
