"""The docs say only what the code does: the README's table of `helpers`, links, paths and commands.

The README's helpers table is held to the code. Each row names a module; every `name(args)` in its "main functions"
column must exist in that module (a public name), be callable with those arguments as written (positional names in
the signature's order, keywords that are real parameters, defaults equal to the code's), and its "used in" column
must list exactly the numbered notebooks whose code cells import that module. Every relative link, every path in
backticks and every `python -m` command in README.md, CONTRIBUTING.md and TEACHING.md must point at something that
exists.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import json
import pkgutil
import re
from pathlib import Path

import pytest

import helpers
from course import student_copy

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = [README, ROOT / "CONTRIBUTING.md", ROOT / "TEACHING.md"]
NUMBERED = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
MORE = "more_arguments"  # what `...` in a documented call stands for
EXTRA_ROWS = {"helpers", "course.exercises", "course.explorer"}  # besides every module of helpers/


def _helpers_table() -> dict[str, tuple[list[str], list[str]]]:
    """{module: (the backticked spans of its "main functions" cell, the notebook numbers of its "used in" cell)}."""
    text = README.read_text(encoding="utf-8")
    start = text.index("| module | what it is for | main functions | used in |")
    rows = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        assert len(cells) == 4, f"a row of the helpers table does not have 4 cells: {line[:80]!r}"
        module = re.fullmatch(r"`([\w.]+)`", cells[0])
        assert module, f"the first cell names no module: {cells[0]!r}"
        rows[module.group(1)] = (re.findall(r"`([^`]+)`", cells[2]), re.findall(r"\b\d\d\b", cells[3]))
    return rows


def _resolve(module, dotted: str):
    """module.a.b, checking that each step is public (and in `__all__` where the module has one)."""
    first = dotted.split(".")[0]
    assert not first.startswith("_"), f"{module.__name__}.{dotted}: the README documents public names only"
    if hasattr(module, "__all__"):
        assert first in module.__all__, f"{module.__name__}.{first} is not in its __all__"
    obj = module
    for part in dotted.split("."):
        assert hasattr(obj, part) and not part.startswith("_"), f"{module.__name__}.{dotted} does not exist"
        obj = getattr(obj, part)
    return obj


def _check_call(module, span: str) -> None:
    """`name(a, b, k=v, ...) -> result`: name exists and takes these arguments as written."""
    call_text = re.sub(r"\s*->.*$", "", span)
    # `...` (more arguments) may follow keywords, where Python allows only a starred argument: mark it as one.
    call_text = re.sub(r"(?<=[(,\s])\.\.\.(?=\s*[,)])", f"*{MORE}", call_text)
    call = ast.parse(call_text, mode="eval").body
    assert isinstance(call, ast.Call), span
    name = ast.unparse(call.func)
    obj = _resolve(module, name)
    params = list(inspect.signature(obj).parameters.values())
    if params and params[0].name == "self":  # a method documented as Class.method(...)
        params = params[1:]
    by_name = {p.name: p for p in params}
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    ellipsis = False
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred) and ast.unparse(arg.value) == MORE:
            ellipsis = True
        elif isinstance(arg, ast.Starred):
            var = [p.name for p in params if p.kind == p.VAR_POSITIONAL]
            assert var == [ast.unparse(arg.value)], f"{span}: {module.__name__}.{name} has no *{var}"
        else:
            assert isinstance(arg, ast.Name), f"{span}: a positional argument is written as a name"
            if ellipsis:
                assert arg.id in by_name, f"{span}: {module.__name__}.{name} has no parameter {arg.id}"
            else:
                assert i < len(positional) and positional[i].name == arg.id, (
                    f"{span}: argument {i} of {module.__name__}.{name} is "
                    f"{positional[i].name if i < len(positional) else 'nothing'}, not {arg.id}"
                )
    for keyword in call.keywords:
        assert keyword.arg is not None, f"{span}: write **kwargs as keywords"
        param = by_name.get(keyword.arg)
        assert param is not None, f"{span}: {module.__name__}.{name} has no parameter {keyword.arg}"
        assert param.kind != param.POSITIONAL_ONLY, f"{span}: {keyword.arg} is positional-only"
        documented = ast.literal_eval(keyword.value)
        assert param.default is not param.empty, f"{span}: {keyword.arg} has no default in the code"
        assert documented == param.default, f"{span}: {keyword.arg} defaults to {param.default!r} in the code"
    if not ellipsis:
        given = {a.id for a in call.args if isinstance(a, ast.Name)} | {k.arg for k in call.keywords}
        required = [
            p.name
            for p in params
            if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in given
        ]
        assert not required, f"{span}: {module.__name__}.{name} also needs {required} (or write `...`)"


def _imported_modules(notebook: Path) -> set[str]:
    """Every module a code cell of the notebook imports by name (`import a.b`, `from a.b import c`, and `a.b.c`
    when c is itself a module)."""
    found = set()
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "\n".join(
            line for line in "".join(cell["source"]).splitlines() if not line.lstrip().startswith(("%", "!"))
        )
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module)
                package = ROOT.joinpath(*node.module.split("."))  # only this repository's packages matter here
                found |= {
                    f"{node.module}.{alias.name}"
                    for alias in node.names
                    if (package / f"{alias.name}.py").is_file() or (package / alias.name / "__init__.py").is_file()
                }
    return found


def test_the_table_has_a_row_for_every_helpers_module():
    modules = {f"helpers.{m.name}" for m in pkgutil.iter_modules(helpers.__path__)}
    assert set(_helpers_table()) == modules | EXTRA_ROWS


@pytest.mark.parametrize("module_name", sorted(_helpers_table()))
def test_documented_functions_exist_with_these_arguments(module_name: str):
    module = importlib.import_module(module_name)
    spans, _ = _helpers_table()[module_name]
    calls = [span for span in spans if "(" in span]
    assert calls, f"{module_name}: its row documents no function"
    for span in spans:
        if "(" in span:
            _check_call(module, span)
        else:
            _resolve(module, span)


def test_used_in_lists_exactly_the_notebooks_that_import_the_module():
    imports = {notebook.name[:2]: _imported_modules(notebook) for notebook in NUMBERED}
    for module, (_, documented) in _helpers_table().items():
        actual = sorted(number for number, names in imports.items() if module in names)
        assert documented == actual, f"README: {module} is used in {', '.join(actual) or 'no notebook'}"


def _link_targets(doc: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.DOTALL)
    return re.findall(r"\]\(([^)\s]+)\)", text)


def _left_out_of_this_copy(path: str) -> bool:
    """Whether this repository is a student copy and ``path`` one of what it leaves out (the worked solutions)."""
    return student_copy.is_student_copy(ROOT) and student_copy.left_out(path.split("#")[0].strip("/"))


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_relative_links_resolve(doc: Path):
    targets = [t for t in _link_targets(doc) if not re.match(r"[a-z]+:|#", t) and "NN" not in t]
    assert targets or doc.name == "TEACHING.md"
    for target in targets:
        if _left_out_of_this_copy(target):
            continue
        assert (doc.parent / target.split("#")[0]).exists(), f"{doc.name} links {target}, which does not exist"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_paths_in_backticks_exist(doc: Path):
    """`course/qa/platforms.py`, `notebooks/solutions/`: a path written in the docs is a path in the repository
    (built outputs under build/ and placeholders such as NN aside)."""
    paths = set(re.findall(r"`((?:\.?[\w-]+/)+[\w.*-]*)`", doc.read_text(encoding="utf-8")))
    paths = {p for p in paths if not p.startswith("build/") and "NN" not in p}
    assert paths
    for path in sorted(paths):
        if _left_out_of_this_copy(path):
            continue
        assert list(ROOT.glob(path.rstrip("/"))), f"{doc.name} names {path}, which does not exist"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_python_m_commands_name_modules_that_exist(doc: Path):
    modules = set(re.findall(r"python -m ([\w.]+)", doc.read_text(encoding="utf-8")))
    for module in sorted(modules - {"venv", "pip", "pytest"}):
        if module.endswith(".NAME"):
            continue
        assert importlib.util.find_spec(module) is not None, f"{doc.name}: `python -m {module}` names no module"


def _code_lines(text: str, language: str) -> list[str]:
    blocks = re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)
    return [line for block in blocks for line in block.splitlines()]


def test_set_up_lines_work_as_pasted_in_every_shell():
    """Issue 35. Every set-up line names the virtual environment's own Python, so no line depends on an activation a
    shell may refuse (PowerShell's execution policy), and when one line fails the next cannot install into the
    system's Python. No comments (zsh and cmd pass an inline `#` on as arguments), and in the Windows lines no `&&`
    (Windows PowerShell 5.1 has none) and no `;` (cmd has none)."""
    text = README.read_text(encoding="utf-8")
    unix, windows = _code_lines(text, "bash"), _code_lines(text, "powershell")
    assert len(unix) >= 7 and len(windows) >= 4
    for line in unix + windows:
        assert "#" not in line and "activate" not in line.lower(), line
    for line in unix:
        assert re.fullmatch(
            r"python3 -m venv \.venv|\.venv/bin/python -m (pip install|jupyter lab|pytest)\b.*", line
        ), line
    for line in windows:
        windows_line = r"py -3\.1\d -m venv \.venv|\.venv\\Scripts\\python -m (pip install -r requirements\.txt|jupyter lab|pytest)"
        assert re.fullmatch(windows_line, line), line
        assert "&&" not in line and ";" not in line, line


def test_ci_runs_the_readmes_commands():
    """`.ci/run` installs and tests exactly as the README's Linux lines do."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    unix = _code_lines(README.read_text(encoding="utf-8"), "bash")
    for line in (
        "python3 -m venv .venv",
        ".venv/bin/python -m pip install -r requirements.txt",
        ".venv/bin/python -m pytest",
        ".venv/bin/python -m pytest -m browser",
    ):
        assert line in unix, f"README: no line {line!r}"
        assert re.search(rf"^{re.escape(line)}$", ci, flags=re.MULTILINE), f".ci/run does not run {line!r}"
