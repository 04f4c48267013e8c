"""The Python annotation module: context managers, a decorator, the data loader wrapper.
Checks its own no-op behaviour when not traced; prints whether it was traced."""
import dreamscope


@dreamscope.operation("update")
def update(x):
    return x + 1


def main():
    total = 0
    for i, batch in enumerate(dreamscope.data_loader([10, 20, 30, 40])):
        with dreamscope.step(i):
            with dreamscope.operation("forward"):
                total = update(total + batch)
    with dreamscope.fetch(5):
        pass
    with dreamscope.prep(5):
        pass
    dreamscope.mark("done", 1)
    assert total == 104, total
    if not dreamscope.is_traced():
        # Not traced: the decorator hands the function back untouched.
        f = lambda: 1  # noqa: E731
        assert dreamscope.operation("x")(f) is f
    print("traced" if dreamscope.is_traced() else "untraced")


main()
