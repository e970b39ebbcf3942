"""Operations written in Python: kp.OpComposite."""

from ._kp import OpBase


class OpComposite(OpBase):
    """An operation made of other operations, recorded one after the other
    into the sequence's command buffer as one step: the Python
    equivalent of a custom C++ operation, since Python cannot record Vulkan
    commands itself.

    ``kp.OpComposite([kp.OpSyncDevice([x]), kp.OpAlgoDispatch(algo),
    kp.OpSyncLocal([x])])`` records the three operations, checks them
    before each submission (``pre_eval``), runs their ``post_eval`` after
    it, has the sequence record its batch anew when one of them needs it
    (an algorithm rebuilt), and declares the accesses of all of them, so the
    sequence orders it against earlier and later operations only where they
    conflict; inside, each built-in operation puts a barrier before itself.
    An inner operation that declares nothing makes the whole one undeclared
    (full barriers around it).

    Subclass it to add work of your own around the inner operations, and
    call the base methods (``super().pre_eval(command_buffer)``, ...) from
    yours. ``self.operations`` may be changed between recordings; the
    sequence sees the change when it records its batch anew (return True
    from ``needs_rerecord``, or call ``Sequence.rerecord()``).
    """

    def __init__(self, operations):
        super().__init__()
        ## The inner operations, recorded in this order.
        self.operations = list(operations)
        for operation in self.operations:
            if not isinstance(operation, OpBase):
                raise TypeError(
                    f"kp.OpComposite takes kp operations, not {type(operation).__name__}")

    def record(self, command_buffer):
        """Records each operation, in order, into `command_buffer`."""
        for operation in self.operations:
            operation.record(command_buffer)

    def pre_eval(self, command_buffer):
        """Runs each operation's checks before a submission."""
        for operation in self.operations:
            operation.pre_eval(command_buffer)

    def post_eval(self, command_buffer):
        """Runs each operation's work after a submission completed."""
        for operation in self.operations:
            operation.post_eval(command_buffer)

    def needs_rerecord(self):
        """True when any operation's recorded commands are stale."""
        return any(operation.needs_rerecord() for operation in self.operations)

    def declare_accesses(self):
        """The operations, whose accesses the sequence takes in."""
        return list(self.operations)
