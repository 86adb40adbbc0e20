"""The commands of the stateful model, by area of the protocol: each a function of the
:class:`~waypost.properties.commands.world.World` and concrete arguments, which performs
requests and checks their answers against the model."""
