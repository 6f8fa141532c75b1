"""Executes docs/chapter.ipynb headless with nbclient (ctest's `notebook` test) and checks that it
ran without error and that its charts are in the outputs:
    notebook_check.py NOTEBOOK [--write]
--write saves the executed notebook, outputs included, over NOTEBOOK (so it reads on a forge
without running). Exit 77 (ctest's skip) with the reason when a Debian package is missing."""
import importlib
import os
import sys

PACKAGES = {"nbclient": "python3-nbclient", "nbformat": "python3-nbformat", "ipykernel": "python3-ipykernel",
            "pandas": "python3-pandas", "plotly": "python3-plotly"}


def main():
    path, write = sys.argv[1], "--write" in sys.argv[2:]
    missing = []
    for module, package in PACKAGES.items():
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(package)
    if missing:
        print(f"notebook: skipped: {' '.join(missing)} not installed (scripts/install-deps.sh installs them)")
        return 77
    import nbclient
    import nbformat
    nb = nbformat.read(path, as_version=4)
    # The kernel is this Python (Debian's, with numpy and onnx), whatever kernelspec the notebook names.
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": os.path.dirname(path)}})
    client.execute()
    figures = errors = 0
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            errors += out.get("output_type") == "error"
            figures += "application/vnd.plotly.v1+json" in out.get("data", {})
    code = sum(c.cell_type == "code" for c in nb.cells)
    print(f"notebook: {code} code cells executed, {figures} Plotly figures in the outputs, {errors} errors")
    if errors or figures < 6:
        return 1
    if write:
        nbformat.write(nb, path)
        print(f"notebook: outputs saved to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
