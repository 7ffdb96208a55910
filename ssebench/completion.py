"""``ssebench completion bash|zsh|fish``: a shell completion script, made from the argparse tree.

Why our own and not shtab or argcomplete: the tree is small (sub-commands, options, a few
choices), the script is generated from the same parser ``ssebench`` runs, so it cannot
drift, and a completion script is not worth a new dependency in every task image. argcomplete
would also run Python on every <Tab>; these scripts are static. Options that take a value
complete file names, options with choices complete their choices.

Install: ``ssebench completion bash > ~/.local/share/bash-completion/completions/ssebench``,
``ssebench completion zsh > "${fpath[1]}/_ssebench"`` (or ``source <(ssebench completion zsh)``),
``ssebench completion fish > ~/.config/fish/completions/ssebench.fish``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import dataclass, field

SHELLS = ("bash", "zsh", "fish")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description="Print a completion script for SHELL. bash: save it as "
        "~/.local/share/bash-completion/completions/ssebench; zsh: "
        "`source <(ssebench completion zsh)` in ~/.zshrc; fish: save it "
        "as ~/.config/fish/completions/ssebench.fish.",
    )
    p.add_argument("shell", metavar="SHELL", choices=SHELLS, help=" | ".join(SHELLS))
    p.set_defaults(func=_completion)


@dataclass
class Option:
    flags: list[str]
    takes_value: bool
    choices: list[str]
    help: str


@dataclass
class Node:
    """One command (``""`` is ``ssebench`` itself, ``"agents install"`` a sub-command)."""

    path: str
    help: str = ""
    children: dict[str, Node] = field(default_factory=dict)
    options: list[Option] = field(default_factory=list)
    choices: list[str] = field(default_factory=list)  # of the first positional with choices


def walk(parser: argparse.ArgumentParser, path: str = "", help_text: str = "") -> Node:
    node = Node(path, help_text)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, child in action.choices.items():
                node.children[name] = walk(child, f"{path} {name}".strip(), helps.get(name, ""))
        elif action.option_strings:
            node.options.append(
                Option(
                    list(action.option_strings),
                    action.nargs != 0,
                    [str(c) for c in action.choices or ()],
                    action.help or "",
                )
            )
        elif (choices := action.choices or getattr(action.type, "choices", None)) and not node.choices:
            node.choices = [str(c) for c in choices]
    return node


def _nodes(root: Node) -> list[Node]:
    out = [root]
    for child in root.children.values():
        out += _nodes(child)
    return out


def bash(root: Node, prog: str = "ssebench") -> str:
    nodes = _nodes(root)
    func = "_" + prog.replace("-", "_")
    paths = "|".join(shlex.quote(n.path) for n in nodes if n.path)
    words_cases, value_cases = [], []
    for n in nodes:
        words = [*n.children, *n.choices, *(f for o in n.options for f in o.flags)]
        label = shlex.quote(n.path) if n.path else '""'
        words_cases.append(f"        {label}) words={shlex.quote(' '.join(words))};;")
        for o in n.options:
            if o.takes_value:
                pattern = "|".join(shlex.quote(f"{n.path}:{flag}") for flag in o.flags)
                value = shlex.quote(" ".join(o.choices)) if o.choices else "__files__"
                value_cases.append(f"        {pattern}) values={value};;")
    return "\n".join(
        [
            f"# {prog} completion for bash (and zsh through bashcompinit); made by `{prog} completion bash`",
            f"{func}() {{",
            '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" path="" word i',
            '    local words="" values=""',
            "    for ((i = 1; i < COMP_CWORD; i++)); do",
            '        word="${COMP_WORDS[i]}"',
            '        case "${path:+$path }$word" in',
            f'            {paths}) path="${{path:+$path }}$word";;',
            "        esac",
            "    done",
            '    case "$path:$prev" in',
            *value_cases,
            "    esac",
            "    if [[ $values == __files__ ]]; then",
            '        COMPREPLY=($(compgen -f -- "$cur")); return',
            "    elif [[ -n $values ]]; then",
            '        COMPREPLY=($(compgen -W "$values" -- "$cur")); return',
            "    fi",
            '    case "$path" in',
            *words_cases,
            "    esac",
            '    COMPREPLY=($(compgen -W "$words" -- "$cur"))',
            '    if [[ ${#COMPREPLY[@]} -eq 0 && $cur != -* ]]; then COMPREPLY=($(compgen -f -- "$cur")); fi',
            "}",
            f"complete -o filenames -F {func} {prog}",
            "",
        ]
    )


def zsh(root: Node, prog: str = "ssebench") -> str:
    return (
        f"# {prog} completion for zsh: the bash script through zsh's bashcompinit\n"
        "(( $+functions[compdef] )) || { autoload -U +X compinit && compinit }\n"
        "autoload -U +X bashcompinit && bashcompinit\n" + bash(root, prog)
    )


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fish(root: Node, prog: str = "ssebench") -> str:
    lines = [f"# {prog} completion for fish; made by `{prog} completion fish`", f"complete -c {prog} -f"]
    for n in _nodes(root):
        words = n.path.split()
        cond = "; and ".join(f"__fish_seen_subcommand_from {w}" for w in words) or "__fish_use_subcommand"
        if n.children:
            names = " ".join(n.children)
            here = cond if not words else f"{cond}; and not __fish_seen_subcommand_from {names}"
            for name, child in n.children.items():
                lines.append(f"complete -c {prog} -n {_fish_quote(here)} -a {name} -d {_fish_quote(child.help)}")
        for choice in n.choices:
            lines.append(f"complete -c {prog} -n {_fish_quote(cond)} -a {_fish_quote(choice)}")
        for o in n.options:
            parts = [f"complete -c {prog} -n {_fish_quote(cond)}"]
            for flag in o.flags:
                parts.append(f"-l {flag[2:]}" if flag.startswith("--") else f"-s {flag[1:]}")
            if o.choices:
                parts.append(f"-x -a {_fish_quote(' '.join(o.choices))}")
            elif o.takes_value:
                parts.append("-r -F")
            parts.append(f"-d {_fish_quote(o.help.replace('%(default)s', ''))}")
            lines.append(" ".join(parts))
    return "\n".join(lines) + "\n"


def script(shell: str, parser: argparse.ArgumentParser) -> str:
    root = walk(parser)
    return {"bash": bash, "zsh": zsh, "fish": fish}[shell](root, parser.prog)


def _completion(args: argparse.Namespace) -> int:
    from ssebench.cli import build_parser

    sys.stdout.write(script(args.shell, build_parser()))
    return 0
