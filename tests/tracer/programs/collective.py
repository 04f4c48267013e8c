"""dreamscope.collective from Python: as a context manager with the bytes a rank
contributes, and as a decorator without. Prints whether it was traced."""
import dreamscope


@dreamscope.collective("barrier")
def barrier():
    return 1


def main():
    grad = bytearray(4096)
    with dreamscope.collective("all_reduce", len(grad)):
        grad[0] = 1
    with dreamscope.collective("broadcast", 64):
        pass
    assert barrier() == 1
    if not dreamscope.is_traced():
        f = lambda: 1  # noqa: E731
        assert dreamscope.collective("x", 1)(f) is f
    print("traced" if dreamscope.is_traced() else "untraced")


main()
