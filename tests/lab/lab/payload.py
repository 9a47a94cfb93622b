"""The release payload as the lab's pods see it: which image is the node-joiner, what the release image prints.

``oc adm node-image create`` finds the node-joiner image in ConfigMap ``openshift-config/installer-images``
(``images.json`` key ``installer``; oc reads it from 4.18, the installer ships it from 4.19, ``lab.versions``),
else in the release payload's ``baremetal-installer`` tag (openshift/oc pkg/cli/admin/nodeimage/
basenodeimagecommand.go@6febe61977471b066f08d513424b226b82ee518f and @b2a93a639c07ebf4d547d10877b6c13f65583248;
4.17: only the tag, create.go@d76df14ea3d7ff9916ea576b6335cd3a220cd1bf).
"""

from __future__ import annotations

import hashlib
import json

from . import kinds, seeds

CONFIGMAP = kinds.by_kind("v1", "ConfigMap")
CLUSTERVERSION = kinds.by_kind("config.openshift.io/v1", "ClusterVersion")


def _installer_of(configmap) -> str | None:
    text = ((configmap or {}).get("data") or {}).get("images.json")
    try:
        return json.loads(text).get("installer") if text else None
    except ValueError:
        return None


def installer_image(store) -> str | None:
    """The ``installer`` image of ConfigMap installer-images as the cluster serves it now."""
    for namespace in ("openshift-config", "openshift"):
        image = _installer_of(store.find(CONFIGMAP, namespace, "installer-images"))
        if image:
            return image
    return None


def seeded_installer_image(variant: str) -> str | None:
    """The variant's node-joiner image: the release payload has it even when a test deletes the ConfigMap."""
    for obj in seeds.load_seed(variant):
        if obj.get("kind") == "ConfigMap" and obj["metadata"]["name"] == "installer-images":
            return _installer_of(obj)
    return None


def desired(store) -> dict:
    cv = store.find(CLUSTERVERSION, None, "version") or {}
    return (cv.get("status") or {}).get("desired") or {}


def release_image(store) -> str | None:
    return desired(store).get("image")


def _art_dev(release: str) -> str:
    return release.split("@", 1)[0].rsplit(":", 1)[0].replace("ocp-release", "ocp-v4.0-art-dev")


def baremetal_installer_image(store, seeded: str | None = None) -> str:
    """The payload's ``baremetal-installer`` image: the seeded installer image, else one derived from the
    release image (stable for a given release)."""
    release = release_image(store) or ""
    if seeded:
        return seeded
    return _art_dev(release) + "@sha256:" + hashlib.sha256(("baremetal-installer " + release).encode()).hexdigest()


def image_references(store, installer) -> str:
    """``/release-manifests/image-references`` of the release: an ImageStream listing the payload images."""
    release = release_image(store) or ""
    repository = _art_dev(release)
    tags = [
        ("baremetal-installer", baremetal_installer_image(store, installer)),
        ("installer", repository + "@sha256:" + "c2" * 32),
        ("machine-os-images", repository + "@sha256:" + "d3" * 32),
        ("cli", repository + "@sha256:" + "e4" * 32),
    ]
    stream = {
        "kind": "ImageStream",
        "apiVersion": "image.openshift.io/v1",
        "metadata": {"name": desired(store).get("version", ""), "creationTimestamp": None},
        "spec": {
            "lookupPolicy": {"local": False},
            "tags": [
                {
                    "name": name,
                    "annotations": {"io.openshift.build.source-location": ""},
                    "from": {"kind": "DockerImage", "name": image},
                    "generation": None,
                    "importPolicy": {},
                    "referencePolicy": {"type": ""},
                }
                for name, image in sorted(tags)
            ],
        },
    }
    return json.dumps(stream, indent=2) + "\n"
