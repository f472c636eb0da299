#part-handler
# cloud-init part handler for machineadm: claims the MachineConfig part of multipart user data
# (text/x-machineadm-config, a type `cloud-init devel make-mime` can write and cloud-init's parser
# keeps) and writes it to /etc/machineadm/config.d/, where a plain `machineadm init` reads it.
# cloud-init runs part handlers while it consumes user data (its init stage), before the final
# stage runs runcmd, so the file is in place when machineadm starts.
#
# Each part becomes user-data-NN.yaml (mode 0600, written whole through a rename, so machineadm never
# reads half a file); files of an earlier boot's user data that this one no longer carries are
# removed. Nothing outside /etc/machineadm/config.d/ is touched. MACHINEADM_ROOT (default /)
# prefixes the path, for tests against a scratch root.
import logging
import os
import re
import tempfile

handler_version = 2

CONTENT_TYPE = "text/x-machineadm-config"
LOG = logging.getLogger("cloudinit.handlers.machineadm")
NAME = re.compile(r"^user-data-\d+\.yaml$")

_written = []


def list_types():
    return [CONTENT_TYPE]


def _config_dir():
    root = os.environ.get("MACHINEADM_ROOT", "/")
    return os.path.join(root, "etc/machineadm/config.d")


def _write(directory, name, body):
    os.makedirs(directory, mode=0o755, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + name + ".")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(body)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, os.path.join(directory, name))
    except BaseException:
        os.unlink(tmp)
        raise


def handle_part(data, ctype, filename, payload, frequency=None):
    directory = _config_dir()
    if ctype == "__begin__":
        _written.clear()
        return
    if ctype == "__end__":
        if os.path.isdir(directory):
            for stale in sorted(os.listdir(directory)):
                if NAME.match(stale) and stale not in _written:
                    os.unlink(os.path.join(directory, stale))
        return
    body = payload.encode("utf-8") if isinstance(payload, str) else (payload or b"")
    if not body.strip():
        # Python's email parser (and so cloud-init) reads a part with no blank line after its
        # headers as headers with an empty body; machineadm reading the same user data itself
        # would take the YAML. Say so rather than write an empty configuration.
        LOG.warning(
            "machineadm part %s has an empty body: put a blank line between its headers and the "
            "MachineConfig; nothing written to %s", filename, directory)
        return
    name = "user-data-%02d.yaml" % (len(_written) + 1)
    _write(directory, name, body)
    _written.append(name)
    LOG.info("machineadm part %s written to %s", filename, os.path.join(directory, name))
