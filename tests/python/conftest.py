"""pytest setup of the Python module's tests (ctest python_module): the
module comes from PYTHONPATH (build/python); DEEP500_SOURCE_DIR is the
repository (recipes); ONNX's test data is Debian's libonnx-testdata."""
import os
import pathlib

import pytest

SOURCE = pathlib.Path(os.environ.get("DEEP500_SOURCE_DIR", pathlib.Path(__file__).parents[2]))
ONNX_NODE_TESTS = pathlib.Path("/usr/share/libonnx-testdata/data/node")


@pytest.fixture
def source_dir():
    return SOURCE


@pytest.fixture
def onnx_node_test():
    """(model path, [inputs], [expected outputs]) of one of ONNX's node tests."""
    import onnx
    from onnx import numpy_helper

    def load(name):
        folder = ONNX_NODE_TESTS / name
        data = folder / "test_data_set_0"

        def read(prefix):
            out = []
            for f in sorted(data.glob(f"{prefix}_*.pb"), key=lambda p: int(p.stem.split("_")[1])):
                t = onnx.TensorProto()
                t.ParseFromString(f.read_bytes())
                out.append(numpy_helper.to_array(t))
            return out
        return str(folder / "model.onnx"), read("input"), read("output")
    return load
