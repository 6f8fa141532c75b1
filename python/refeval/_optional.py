"""The optional packages of the notebook functions (DataFrames, charts), imported when first used."""
import importlib

# module -> the Debian 12 package that installs it (scripts/install-deps.sh installs them all)
DEBIAN = {"pandas": "python3-pandas", "plotly": "python3-plotly", "plotly.express": "python3-plotly",
          "plotly.graph_objects": "python3-plotly"}


def need(module):
    """The module, or an ImportError naming the Debian package that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        package = DEBIAN.get(module, module)
        raise ImportError(f"refeval: this function needs {module.split('.')[0]}, which is not installed: "
                          f"apt-get install {package} (or pip install {module.split('.')[0]})") from e
