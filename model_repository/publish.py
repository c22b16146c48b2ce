# Copyright: (c) 2026, aiops.triton contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""Publish built model versions to S3: ``python model_repository/publish.py --bucket B ...``.

Each version directory of the built repository goes to ``<prefix>/<model>/<version>/``: every
file first, then ``MANIFEST.json`` (plugins/module_utils/manifest.py) last, so a version without
a manifest is known to be incomplete.  Published versions are immutable: a version whose remote
manifest equals the local one is skipped (nothing uploaded), one that differs is refused unless
``--force``.  A version missing a file its model needs is refused before anything is uploaded.
Credentials come from boto3's chain (environment, profile, instance role) and are never printed.
Prints a JSON summary on stdout; progress and errors go to stderr.
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys

import yaml

SOURCES = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(SOURCES)


def _load_manifest_module():
    """The collection's manifest contract, loaded by path (no collection install needed)."""
    path = os.path.join(CHECKOUT, "plugins", "module_utils", "manifest.py")
    spec = importlib.util.spec_from_file_location("aiops_triton_manifest", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


mf = _load_manifest_module()


class PublishError(Exception):
    """A problem the operator must fix; the message says what."""


def required_files(config):
    """Files a version cannot be served without, derived from the model's config."""
    files = ["golden_cases.json"]
    if config.get("platform") == "onnxruntime_onnx":
        files.append(config.get("default_model_filename") or "model.onnx")
    if config.get("backend") == "python":
        files.append("model.py")
        artifact = config.get("parameters", {}).get("ARTIFACT", {}).get("string_value")
        if artifact:
            files.append(artifact)
    return files


def local_versions(repository, models=None, versions=None):
    """Yield (model, version, version_dir, config) for the built versions selected."""
    for model in sorted(os.listdir(repository)):
        spec_path = os.path.join(SOURCES, model, "model.yml")
        if models and model not in models:
            continue
        if not os.path.isfile(spec_path):
            if models:
                raise PublishError("no model spec %s" % spec_path)
            continue
        with open(spec_path, encoding="utf-8") as handle:
            spec = yaml.safe_load(handle)
        # What is built is what gets published: numbered dirs, not only the spec's list, so a
        # hotfix version can be published from a copied build.
        built = sorted(int(name) for name in os.listdir(os.path.join(repository, model)) if name.isdigit())
        for version in built:
            if versions and version not in versions:
                continue
            yield model, version, os.path.join(repository, model, str(version)), spec["config"]


class Progress(object):
    """A one-line progress bar on a terminal, one line per file otherwise."""

    def __init__(self, label, total_bytes, stream=sys.stderr):
        self.label, self.total, self.done, self.stream = label, max(total_bytes, 1), 0, stream
        self.tty = stream.isatty()

    def file_done(self, rel, size):
        if not self.tty:
            self.stream.write("  uploaded %s/%s (%d bytes)\n" % (self.label, rel, size))

    def __call__(self, chunk):
        self.done += chunk
        if self.tty:
            filled = int(30 * self.done / self.total)
            self.stream.write("\r  %s [%s%s] %5.1f%%" % (self.label, "#" * filled, "." * (30 - filled), 100.0 * self.done / self.total))
            if self.done >= self.total:
                self.stream.write("\n")
            self.stream.flush()


class Publisher(object):
    def __init__(self, client, bucket, prefix, force=False, log=sys.stderr):
        self.client, self.bucket, self.prefix, self.force, self.log = client, bucket, prefix.strip("/"), force, log
        self.uploaded_files = 0

    def key(self, model, version, rel):
        return "/".join(p for p in (self.prefix, model, str(version), rel) if p)

    def remote_manifest(self, model, version):
        from botocore.exceptions import ClientError
        try:
            body = self.client.get_object(Bucket=self.bucket, Key=self.key(model, version, mf.MANIFEST_NAME))["Body"].read()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None
            raise
        return body

    def publish(self, model, version, version_dir, config):
        """Return "published", "unchanged" or raise PublishError."""
        label = "%s/%s" % (model, version)
        if not os.path.isdir(version_dir):
            raise PublishError("%s: %s is not built" % (label, version_dir))
        missing = [rel for rel in required_files(config) if not os.path.isfile(os.path.join(version_dir, rel))]
        if missing:
            raise PublishError("%s: missing %s; the version is not published (no manifest)" % (label, ", ".join(missing)))
        manifest = mf.build_manifest(model, version, version_dir)
        data = mf.dump_manifest(manifest)
        remote = self.remote_manifest(model, version)
        if remote is not None:
            if mf.manifest_digest(remote) == mf.manifest_digest(data):
                self.log.write("%s: already published with the same manifest, nothing to upload\n" % label)
                return "unchanged"
            if not self.force:
                raise PublishError("%s: a different build is already published at s3://%s/%s; published versions are "
                                   "immutable (publish a new version, or --force to overwrite)"
                                   % (label, self.bucket, self.key(model, version, "")))
        progress = Progress(label, sum(f["size"] for f in manifest["files"]), self.log)
        for entry in manifest["files"]:
            self.client.upload_file(os.path.join(version_dir, entry["path"]), self.bucket,
                                    self.key(model, version, entry["path"]), Callback=progress)
            self.uploaded_files += 1
            progress.file_done(entry["path"], entry["size"])
        # last: its presence marks the version complete
        self.client.put_object(Bucket=self.bucket, Key=self.key(model, version, mf.MANIFEST_NAME), Body=data,
                               ContentType="application/json")
        self.log.write("%s: published %d files, manifest %s\n" % (label, len(manifest["files"]), mf.manifest_digest(data)[:12]))
        return "published"


def explain(exc, bucket, endpoint):
    """Turn boto errors into one sentence a person can act on."""
    from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError, PartialCredentialsError
    if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
        return "no usable AWS credentials (set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE or an instance role)"
    if isinstance(exc, EndpointConnectionError):
        return "cannot reach the S3 endpoint %s" % (endpoint or "(AWS default)")
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code", "")
        if code in ("NoSuchBucket",):
            return "bucket %r does not exist at %s" % (bucket, endpoint or "AWS")
        if code in ("InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "403", "InvalidToken", "ExpiredToken"):
            return "the credentials were rejected for bucket %r (%s)" % (bucket, code)
        return "S3 error %s: %s" % (code, exc.response.get("Error", {}).get("Message", exc))
    return str(exc)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--bucket", required=True)
    parser.add_argument("--prefix", default="models", help="key prefix (default: models)")
    parser.add_argument("--endpoint-url", help="S3 endpoint, e.g. http://minio:9000 (default: AWS)")
    parser.add_argument("--region", default=None, help="region (default: boto3's)")
    parser.add_argument("--repository", default=os.path.join(CHECKOUT, "build", "model_repository"),
                        help="built repository (default: build/model_repository)")
    parser.add_argument("--model", action="append", help="only this model (repeatable)")
    parser.add_argument("--version", action="append", type=int, help="only this version (repeatable)")
    parser.add_argument("--build", action="store_true", help="run `python -m model_repository._build` first")
    parser.add_argument("--force", action="store_true", help="overwrite a published version whose manifest differs")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.build:
        out = os.path.dirname(os.path.abspath(args.repository))
        subprocess.run([sys.executable, "-m", "model_repository._build", "--out", out, "--no-docs"], cwd=CHECKOUT, check=True)
    import boto3
    client = boto3.session.Session(region_name=args.region).client("s3", endpoint_url=args.endpoint_url)
    publisher = Publisher(client, args.bucket, args.prefix, force=args.force)
    summary = {"bucket": args.bucket, "prefix": publisher.prefix, "published": [], "unchanged": [], "failed": {}}
    try:
        client.head_bucket(Bucket=args.bucket)
        selected = list(local_versions(args.repository, args.model, args.version))
        if not selected:
            raise PublishError("nothing to publish under %s" % args.repository)
        for model, version, version_dir, config in selected:
            label = "%s/%d" % (model, version)
            try:
                summary[publisher.publish(model, version, version_dir, config)].append(label)
            except PublishError as exc:
                summary["failed"][label] = str(exc)
                sys.stderr.write("error: %s\n" % exc)
    except PublishError as exc:
        summary["failed"]["*"] = str(exc)
        sys.stderr.write("error: %s\n" % exc)
    except Exception as exc:  # boto errors: one clear sentence, never the credentials
        if exc.__class__.__module__.split(".", maxsplit=1)[0] not in ("botocore", "boto3"):
            raise
        if getattr(exc, "response", {}).get("Error", {}).get("Code") in ("404", "NoSuchBucket"):
            exc.response["Error"]["Code"] = "NoSuchBucket"
        summary["failed"]["*"] = explain(exc, args.bucket, args.endpoint_url)
        sys.stderr.write("error: %s\n" % summary["failed"]["*"])
    summary["uploaded_files"] = publisher.uploaded_files
    print(json.dumps(summary, indent=2, sort_keys=True))
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
