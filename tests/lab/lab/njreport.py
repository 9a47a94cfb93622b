"""node-joiner's workflow report (``report.json``, 4.18+) and its stage names.

Written (mode 0600, indented) after every stage change and at the end; ``id`` ``report-addnodes-<UTC minute>``,
``end_time`` Go's zero time until ``Complete``, ``result`` null until then --
openshift/installer pkg/asset/agent/workflow/report/report.go@22e4625923c928f318fe8b972a24420a6b0df81f,
stage.go@3523c1ad8664476e07d6cc7afdfb3a47296f9951, context.go@3523c1ad8664476e07d6cc7afdfb3a47296f9951; the ids
checked by cmd/node-joiner/testdata/add-nodes-report.txt@22e4625923c928f318fe8b972a24420a6b0df81f.
"""

import datetime
import json
import os
import time

ZERO_TIME = "0001-01-01T00:00:00Z"  # Go's zero time.Time, as an unfinished stage shows it

STAGES = {
    "add-nodes-cluster-inspection": "Gathering additional information from the target cluster",
    "create-manifest": "Creating internal configuration manifests",
    "ignition": "Rendering ISO ignition",
    "fetch-base-iso": "Retrieving the base ISO image",
    "fetch-base-iso.extract-image": "Extracting base image from release payload",
    "fetch-base-iso.verify-version": "Verifying base image version",
    "fetch-base-iso.download-image": "Downloading base ISO image",
    "create-agent-artifacts": "Creating agent artifacts for the final image",
    "create-agent-artifacts.agent-tui": "Extracting required artifacts from release payload",
    "create-agent-artifacts.prepare": "Preparing artifacts",
    "generate-iso": "Assembling ISO image",
    "generate-pxe": "Assembling PXE files",
}


def rfc3339(epoch, fraction=False):
    """UTC time as Go's JSON encoding writes it (nanoseconds trimmed of trailing zeros)."""
    moment = datetime.datetime.fromtimestamp(epoch, tz=datetime.timezone.utc)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if fraction and moment.microsecond:
        text += ("." + "%06d" % moment.microsecond).rstrip("0")
    return text + "Z"


class Report:
    """``report.json`` as node-joiner's workflow report writes it after every change."""

    def __init__(self, path, clock):
        self.path = path
        self.clock = clock
        self.doc = {
            "id": "report-addnodes-" + time.strftime("%Y%m%d%H%M", time.gmtime(clock())),
            "start_time": ZERO_TIME,
            "end_time": ZERO_TIME,
            "result": None,
        }

    def _now(self):
        return rfc3339(self.clock(), fraction=True)

    def _write(self):
        # Go's encoding omits empty stages; the key order follows the Go struct.
        doc = {k: self.doc[k] for k in ("id", "start_time", "end_time")}
        if self.doc.get("stages"):
            doc["stages"] = self.doc["stages"]
        doc["result"] = self.doc["result"]
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=2)
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)

    def _new(self, stage_id):
        return {"id": stage_id, "description": STAGES[stage_id], "start_time": self._now(), "end_time": ZERO_TIME}

    @staticmethod
    def _stop(stage, now):
        subs = stage.get("sub_stages")
        if subs and subs[-1]["end_time"] == ZERO_TIME:
            subs[-1]["end_time"] = now
        if stage["end_time"] == ZERO_TIME:
            stage["end_time"] = now

    def stage(self, stage_id):
        stages = self.doc.setdefault("stages", [])
        if stages:
            self._stop(stages[-1], self._now())
        stage = self._new(stage_id)
        if not stages:
            self.doc["start_time"] = stage["start_time"]
        stages.append(stage)
        self._write()

    def sub_stage(self, stage_id):
        owner = self.doc["stages"][-1]
        subs = owner.setdefault("sub_stages", [])
        if subs:
            subs[-1]["end_time"] = self._now()
        subs.append(self._new(stage_id))
        self._write()

    def stage_result(self, stage_id, value):
        for stage in self.doc.get("stages", []):
            if stage["id"] == stage_id:
                # Go's omitempty puts "result" after the times, before sub_stages.
                subs = stage.pop("sub_stages", None)
                stage["result"] = value
                if subs:
                    stage["sub_stages"] = subs
        self._write()

    def complete(self, error):
        result = {"exit_code": 0}
        if error is not None:
            result = {"exit_code": 1, "error_message": str(error), "detailed_error_message": error.detailed}
        self.doc["result"] = result
        stages = self.doc.get("stages")
        if stages:
            self._stop(stages[-1], self._now())
            self.doc["end_time"] = stages[-1]["end_time"]
        self._write()
