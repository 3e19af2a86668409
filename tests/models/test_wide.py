"""The wider group of transformers architectures (model_suite/wide_cases.py), each checked the
suite's way over a shorter sequence of (batch, seq) calls with padded masks: outputs equal eager on
every call, one graph with no break on the first, `fullgraph=True` agrees, one compile."""

import pytest

from model_suite.cases import WIDE_CAPTURED
from model_suite.wide_cases import WIDE_CALLS
from tests.models.harness import check_inference


@pytest.mark.parametrize("case", WIDE_CAPTURED, ids=[case.name for case in WIDE_CAPTURED])
def test_wide_model_is_captured_whole(case):
    check_inference(case, calls=WIDE_CALLS)
