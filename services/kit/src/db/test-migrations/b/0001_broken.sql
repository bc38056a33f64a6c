create table half_done (id integer);
select this_function_does_not_exist();
