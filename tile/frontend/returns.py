"""Early `return`s inside `if` statements, rewritten into one structured `return` at the end.

A function such as Triton's map_elementwise example returns from inside its branches:

    def compare(x, y):                     def compare(x, y):
        if x < y:                              if x < y:
            return -1                              __tile_return = -1
        elif x == y:               --->        else:
            return 0                               if x == y:
        return 1                                       __tile_return = 0
                                                   else:
                                                       __tile_return = 1
                                               return __tile_return

Statements that follow an `if` in which some path returns move into the branches that do not
return (copied when both fall through), so every path ends in an assignment of the one
variable that the code generator carries out of runtime ifs like any other. A function that
may also fall off its end starts with `__tile_return = None`. Functions without a `return`
inside an `if` are left as they are; a `return` inside a loop stays an error.
"""
from __future__ import annotations

import ast

RETURN_NAME = "__tile_return"


def _returns_inside_if(stmts: list[ast.stmt]) -> bool:
    """Whether a `return` sits inside an `if` (not inside a loop or a nested function)."""
    for s in stmts:
        if isinstance(s, ast.If) and (_has_return(s.body) or _has_return(s.orelse)):
            return True
    return False


def _has_return(stmts: list[ast.stmt]) -> bool:
    for s in stmts:
        if isinstance(s, ast.Return):
            return True
        if isinstance(s, ast.If) and (_has_return(s.body) or _has_return(s.orelse)):
            return True
    return False


def _assign(node: ast.Return) -> ast.Assign:
    value = node.value if node.value is not None else ast.Constant(None)
    out = ast.Assign(targets=[ast.Name(RETURN_NAME, ast.Store())], value=value)
    return ast.fix_missing_locations(ast.copy_location(out, node))


def _lower(stmts: list[ast.stmt]) -> tuple[list[ast.stmt], bool]:
    """`stmts` with every return turned into an assignment; and whether all paths returned."""
    for i, s in enumerate(stmts):
        if isinstance(s, ast.Return):
            return stmts[:i] + [_assign(s)], True
        if isinstance(s, ast.If) and (_has_return(s.body) or _has_return(s.orelse)):
            rest = stmts[i + 1:]
            body, body_returns = _lower(s.body)
            if not body_returns:
                body, body_returns = _lower(s.body + rest)
            orelse, else_returns = _lower(s.orelse)
            if not else_returns:
                orelse, else_returns = _lower(s.orelse + rest)
            branch = ast.copy_location(ast.If(test=s.test, body=body or [ast.Pass()], orelse=orelse), s)
            return stmts[:i] + [ast.fix_missing_locations(branch)], body_returns and else_returns
    return stmts, False


def structured_returns(fdef: ast.FunctionDef) -> list[ast.stmt]:
    """The body of `fdef` with returns inside ifs moved to one final return (see the module
    docstring); the body itself when there are none."""
    body = fdef.body
    if not _returns_inside_if(body):
        return body
    lowered, always = _lower(body)
    anchor = next(n for n in ast.walk(fdef) if isinstance(n, ast.Return))
    final = ast.copy_location(ast.Return(value=ast.Name(RETURN_NAME, ast.Load())), anchor)
    if not always:
        init = ast.copy_location(ast.Assign(targets=[ast.Name(RETURN_NAME, ast.Store())], value=ast.Constant(None)),
                                 body[0])
        lowered = [ast.fix_missing_locations(init)] + lowered
    return lowered + [ast.fix_missing_locations(final)]


__all__ = ["structured_returns", "RETURN_NAME"]
