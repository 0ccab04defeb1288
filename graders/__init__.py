"""graders: rubrics as data, registered check functions over final state, change log and trace; Score."""
