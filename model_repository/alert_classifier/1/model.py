"""Triton python backend: classify ops alert texts (TF-IDF + logistic regression, skops).

Input ``alert_text`` BYTES [batch, 1]; outputs ``class_label`` BYTES [batch, 1] and
``confidence`` FP32 [batch, 1].  All texts of all requests in one ``execute`` call are
classified in a single vectorised predict; a request whose text is empty or not UTF-8 gets
its own error response and the others still get answers.
"""

import json
import os
import sys

import numpy as np
import triton_python_backend_utils as pb_utils

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import classify  # noqa: E402  (lives next to this file in the version dir)


def _param(config, key, default):
    return config.get("parameters", {}).get(key, {}).get("string_value", default)


def _decode(raw):
    """bytes -> non-empty str, or raise ValueError saying what is wrong."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError("alert_text is not valid UTF-8 (%s)" % exc.reason)
    text = str(raw)
    if not text.strip():
        raise ValueError("alert_text is empty")
    return text


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        version_dir = os.path.join(args["model_repository"], args["model_version"])
        self.pipeline = classify.load(os.path.join(version_dir, _param(config, "ARTIFACT", "classifier.skops")))
        self.min_confidence = float(_param(config, "MIN_CONFIDENCE", "0.5"))

    def execute(self, requests):
        texts, owners, errors = [], [], {}
        for index, request in enumerate(requests):
            raw = pb_utils.get_input_tensor_by_name(request, "alert_text").as_numpy().reshape(-1)
            try:
                decoded = [_decode(item) for item in raw]
            except ValueError as exc:
                errors[index] = str(exc)
                continue
            texts.extend(decoded)
            owners.extend([index] * len(decoded))

        labels, confidence = classify.classify(self.pipeline, texts, self.min_confidence)
        owners = np.asarray(owners, dtype=np.int64)
        responses = []
        for index in range(len(requests)):
            if index in errors:
                responses.append(pb_utils.InferenceResponse(output_tensors=[], error=pb_utils.TritonError(errors[index])))
                continue
            mine = owners == index
            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("class_label", np.array([s.encode("utf-8") for s in labels[mine]], dtype=object).reshape(-1, 1)),
                pb_utils.Tensor("confidence", confidence[mine].reshape(-1, 1)),
            ]))
        return responses

    def finalize(self):
        self.pipeline = None
