# -*- coding: utf-8 -*-
# Copyright: (c) 2026, aiops.triton contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import (absolute_import, division, print_function)

__metaclass__ = type


class ModuleDocFragment(object):
    # Where the published models live in S3 and how a module reaches it (plugins/module_utils/s3_client.py
    # CONNECTION_ARGSPEC). A module's own timeout differs (one long sync, or one small object), so it is not here.
    DOCUMENTATION = r"""
options:
  bucket:
    description: S3 bucket holding the published models.
    type: str
    required: true
  prefix:
    description: Key prefix under which C(<model>/<version>/) live; empty for the bucket root.
    type: str
    default: ""
  endpoint_url:
    description:
      - S3 endpoint for S3-compatible stores (MinIO, Ceph RGW), for example C(https://minio.example:9000).
        Path-style addressing is used whenever this is set. Omit for AWS S3.
    type: str
  region:
    description: Region to sign requests for; defaults to the profile's or C(us-east-1).
    type: str
  access_key:
    description: Access key id. Falls back to the usual AWS environment variables and config files.
    type: str
    aliases: [aws_access_key_id]
  secret_key:
    description: Secret access key.
    type: str
    aliases: [aws_secret_access_key]
  session_token:
    description: Session token for temporary credentials.
    type: str
    aliases: [aws_session_token]
  profile:
    description: Named profile from the AWS config files of the host the module runs on.
    type: str
  validate_certs:
    description: Verify the endpoint's TLS certificate.
    type: bool
    default: true
  ca_bundle:
    description: CA bundle to verify the endpoint with (a private CA for MinIO/Ceph).
    type: path
  checksum_mode:
    description:
      - boto3 1.36 and later add CRC checksums to every request and validate them on every response by default,
        which older MinIO and Ceph RGW releases reject. V(when_required) (the default) sends and checks them only
        where the S3 API requires it; V(when_supported) is boto3's own default, fine for AWS S3.
    type: str
    choices: [when_required, when_supported]
    default: when_required
"""
