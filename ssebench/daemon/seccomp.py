"""The seccomp filter every sandbox loads: no keyring (docs/security.md).

The kernel's keyrings (session, user, user-session) outlive a check and are shared by
every check of the same uid: a check could store what it saw and a later one read it.
So add_key, request_key and keyctl fail with EPERM. Everything else is allowed
(ptrace too: a tracer runs in the sandbox). Per machine: (audit arch, syscall numbers
of add_key, request_key, keyctl), the native ABI first, then the 32-bit compat one.
"""

from __future__ import annotations

import platform
import struct

_KEYRING_SYSCALLS = {
    "x86_64": ((0xC000003E, (248, 249, 250)), (0x40000003, (286, 287, 288))),
    "aarch64": ((0xC00000B7, (217, 218, 219)), (0x40000028, (309, 310, 311))),
}
_X32_BIT = 0x40000000  # x86_64 syscalls of the x32 ABI: all denied (nothing uses it)
_LD_ABS, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06
_ALLOW, _KILL, _ERRNO, _EPERM = 0x7FFF0000, 0x80000000, 0x00050000, 1


def seccomp_program(machine: str | None = None) -> bytes | None:
    """The classic BPF program bwrap's ``--seccomp`` loads: keyring calls get EPERM, x32
    calls EPERM, any other ABI kills the process; None for an unknown machine."""
    table = _KEYRING_SYSCALLS.get(machine or platform.machine())
    if table is None:
        return None
    code: list[str | tuple[int, int | str, int | str, int]] = []
    for i, (arch, numbers) in enumerate(table):
        code += [f"arch{i}", (_LD_ABS, 0, 0, 4), (_JEQ, 0, f"arch{i + 1}", arch), (_LD_ABS, 0, 0, 0)]
        if arch == 0xC000003E:
            code.append((_JGE, "deny", 0, _X32_BIT))
        code += [(_JEQ, "deny", 0, n) for n in numbers]
        code.append((_RET, 0, 0, _ALLOW))
    code += [f"arch{len(table)}", (_RET, 0, 0, _KILL), "deny", (_RET, 0, 0, _ERRNO | _EPERM)]
    where: dict[str, int] = {}  # label -> index of the instruction after it
    ops: list[tuple[int, int | str, int | str, int]] = []
    for item in code:
        if isinstance(item, str):
            where[item] = len(ops)
        else:
            ops.append(item)

    def jump(target: int | str, at: int) -> int:
        return target if isinstance(target, int) else where[target] - at - 1

    return b"".join(struct.pack("=HBBI", op, jump(jt, i), jump(jf, i), k) for i, (op, jt, jf, k) in enumerate(ops))
