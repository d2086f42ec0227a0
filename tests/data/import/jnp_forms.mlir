module @jit_jnp_forms attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x5xf32>, %arg1: tensor<i32>, %arg2: tensor<3x6xi1>, %arg3: tensor<4xi32>) -> (tensor<4x5xf32> {jax.result_info = "result[0]"}, tensor<4x5xf32> {jax.result_info = "result[1]"}, tensor<f32> {jax.result_info = "result[2]"}, tensor<4xf32> {jax.result_info = "result[3]"}, tensor<4x5xf32> {jax.result_info = "result[4]"}, tensor<4x5xf32> {jax.result_info = "result[5]"}, tensor<4xi32> {jax.result_info = "result[6]"}, tensor<i1> {jax.result_info = "result[7]"}, tensor<3x6xi1> {jax.result_info = "result[8]"}, tensor<3xi32> {jax.result_info = "result[9]"}, tensor<4x5x3xf32> {jax.result_info = "result[10]"}) {
    %c = stablehlo.constant dense<[0, -1, 3, -3]> : tensor<4xi32>
    %cst = stablehlo.constant dense<1.000000e+04> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x5xf32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<4x5xf32>
    %c_0 = stablehlo.constant dense<2> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %c_1 = stablehlo.constant dense<3> : tensor<i32>
    %3 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %4 = stablehlo.concatenate %2, %3, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %5 = "stablehlo.scatter"(%arg0, %4, %cst_2) <{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0, 1], scatter_dims_to_operand_dims = [0, 1]>, unique_indices = true}> ({
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      %29 = stablehlo.add %arg4, %arg5 : tensor<f32>
      stablehlo.return %29 : tensor<f32>
    }) : (tensor<4x5xf32>, tensor<2xi32>, tensor<f32>) -> tensor<4x5xf32>
    %6 = stablehlo.slice %arg0 [0:1, 0:5] : (tensor<4x5xf32>) -> tensor<1x5xf32>
    %7 = stablehlo.reshape %6 : (tensor<1x5xf32>) -> tensor<5xf32>
    %c_3 = stablehlo.constant dense<1> : tensor<i32>
    %8 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %9 = "stablehlo.scatter"(%arg0, %8, %7) <{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0]>, unique_indices = true}> ({
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      stablehlo.return %arg5 : tensor<f32>
    }) : (tensor<4x5xf32>, tensor<1xi32>, tensor<5xf32>) -> tensor<4x5xf32>
    %c_4 = stablehlo.constant dense<0> : tensor<i32>
    %10 = stablehlo.compare LT, %arg1, %c_4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_5 = stablehlo.constant dense<4> : tensor<i32>
    %11 = stablehlo.add %arg1, %c_5 : tensor<i32>
    %12 = stablehlo.select %10, %11, %arg1 : tensor<i1>, tensor<i32>
    %c_6 = stablehlo.constant dense<2> : tensor<i32>
    %c_7 = stablehlo.constant dense<0> : tensor<i32>
    %13 = stablehlo.compare LT, %c_6, %c_7, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_8 = stablehlo.constant dense<2> : tensor<i32>
    %c_9 = stablehlo.constant dense<5> : tensor<i32>
    %14 = stablehlo.add %c_8, %c_9 : tensor<i32>
    %c_10 = stablehlo.constant dense<2> : tensor<i32>
    %15 = stablehlo.select %13, %14, %c_10 : tensor<i1>, tensor<i32>
    %16 = stablehlo.dynamic_slice %arg0, %12, %15, sizes = [1, 1] : (tensor<4x5xf32>, tensor<i32>, tensor<i32>) -> tensor<1x1xf32>
    %17 = stablehlo.reshape %16 : (tensor<1x1xf32>) -> tensor<f32>
    %18 = call @median(%arg0) : (tensor<4x5xf32>) -> tensor<4xf32>
    %cst_11 = stablehlo.constant dense<3.300000e+00> : tensor<f32>
    %19 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<4x5xf32>
    %20 = stablehlo.remainder %1, %19 : tensor<4x5xf32>
    %cst_12 = stablehlo.constant dense<-6.28318548> : tensor<f32>
    %21 = call @remainder(%1, %cst_12) : (tensor<4x5xf32>, tensor<f32>) -> tensor<4x5xf32>
    %22 = stablehlo.remainder %arg3, %c : tensor<4xi32>
    %c_13 = stablehlo.constant dense<false> : tensor<i1>
    %23 = stablehlo.reduce(%arg2 init: %c_13) applies stablehlo.maximum across dimensions = [0, 1] : (tensor<3x6xi1>, tensor<i1>) -> tensor<i1>
    %24 = stablehlo.reverse %arg2, dims = [0] : tensor<3x6xi1>
    %25 = stablehlo.maximum %arg2, %24 : tensor<3x6xi1>
    %26 = call @argmax(%arg2) : (tensor<3x6xi1>) -> tensor<3xi32>
    %27 = stablehlo.slice %arg0 [0:3, 0:4] : (tensor<4x5xf32>) -> tensor<3x4xf32>
    %28 = stablehlo.broadcast_in_dim %27, dims = [2, 0] : (tensor<3x4xf32>) -> tensor<4x5x3xf32>
    return %5, %9, %17, %18, %20, %21, %22, %23, %25, %26, %28 : tensor<4x5xf32>, tensor<4x5xf32>, tensor<f32>, tensor<4xf32>, tensor<4x5xf32>, tensor<4x5xf32>, tensor<4xi32>, tensor<i1>, tensor<3x6xi1>, tensor<3xi32>, tensor<4x5x3xf32>
  }
  func.func private @median(%arg0: tensor<4x5xf32>) -> tensor<4xf32> {
    %cst = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %0 = call @quantile(%arg0, %cst) : (tensor<4x5xf32>, tensor<f32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func private @quantile(%arg0: tensor<4x5xf32>, %arg1: tensor<f32>) -> tensor<4xf32> {
    %0 = stablehlo.compare NE, %arg0, %arg0, FLOAT : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xi1>
    %c = stablehlo.constant dense<false> : tensor<i1>
    %1 = stablehlo.reduce(%0 init: %c) applies stablehlo.or across dimensions = [1] : (tensor<4x5xi1>, tensor<i1>) -> tensor<4xi1>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0] : (tensor<4xi1>) -> tensor<4x1xi1>
    %cst = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %3 = call @_where(%2, %cst, %arg0) : (tensor<4x1xi1>, tensor<f32>, tensor<4x5xf32>) -> tensor<4x5xf32>
    %4 = "stablehlo.sort"(%3) <{dimension = 1 : i64, is_stable = true}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      %cst_9 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %22 = stablehlo.compare EQ, %arg2, %cst_9, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_10 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %23 = stablehlo.select %22, %cst_10, %arg2 : tensor<i1>, tensor<f32>
      %24 = stablehlo.compare NE, %arg2, %arg2, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_11 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
      %25 = stablehlo.select %24, %cst_11, %23 : tensor<i1>, tensor<f32>
      %cst_12 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %26 = stablehlo.compare EQ, %arg3, %cst_12, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_13 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %27 = stablehlo.select %26, %cst_13, %arg3 : tensor<i1>, tensor<f32>
      %28 = stablehlo.compare NE, %arg3, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_14 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
      %29 = stablehlo.select %28, %cst_14, %27 : tensor<i1>, tensor<f32>
      %30 = stablehlo.compare LT, %25, %29, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %30 : tensor<i1>
    }) : (tensor<4x5xf32>) -> tensor<4x5xf32>
    %cst_0 = stablehlo.constant dense<5.000000e+00> : tensor<f32>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %5 = stablehlo.subtract %cst_0, %cst_1 : tensor<f32>
    %6 = stablehlo.multiply %arg1, %5 : tensor<f32>
    %7 = stablehlo.floor %6 : tensor<f32>
    %8 = stablehlo.ceil %6 : tensor<f32>
    %cst_2 = stablehlo.constant dense<5.000000e+00> : tensor<f32>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %9 = stablehlo.subtract %cst_2, %cst_3 : tensor<f32>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %10 = stablehlo.clamp %cst_4, %7, %9 : tensor<f32>
    %cst_5 = stablehlo.constant dense<5.000000e+00> : tensor<f32>
    %cst_6 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %11 = stablehlo.subtract %cst_5, %cst_6 : tensor<f32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %12 = stablehlo.clamp %cst_7, %8, %11 : tensor<f32>
    %13 = stablehlo.convert %10 : (tensor<f32>) -> tensor<i32>
    %14 = stablehlo.convert %12 : (tensor<f32>) -> tensor<i32>
    %15 = stablehlo.broadcast_in_dim %13, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %16 = "stablehlo.gather"(%4, %15) <{dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [1], start_index_map = [1]>, indices_are_sorted = false, slice_sizes = array<i64: 4, 1>}> : (tensor<4x5xf32>, tensor<1xi32>) -> tensor<4xf32>
    %17 = stablehlo.broadcast_in_dim %14, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %18 = "stablehlo.gather"(%4, %17) <{dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [1], start_index_map = [1]>, indices_are_sorted = false, slice_sizes = array<i64: 4, 1>}> : (tensor<4x5xf32>, tensor<1xi32>) -> tensor<4xf32>
    %19 = stablehlo.add %16, %18 : tensor<4xf32>
    %cst_8 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %20 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %21 = stablehlo.multiply %19, %20 : tensor<4xf32>
    return %21 : tensor<4xf32>
  }
  func.func private @_where(%arg0: tensor<4x1xi1>, %arg1: tensor<f32>, %arg2: tensor<4x5xf32>) -> tensor<4x5xf32> {
    %0 = stablehlo.convert %arg1 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %arg0, dims = [0, 1] : (tensor<4x1xi1>) -> tensor<4x5xi1>
    %2 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<4x5xf32>
    %3 = stablehlo.select %1, %2, %arg2 : tensor<4x5xi1>, tensor<4x5xf32>
    return %3 : tensor<4x5xf32>
  }
  func.func private @remainder(%arg0: tensor<4x5xf32>, %arg1: tensor<f32>) -> tensor<4x5xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<4x5xf32>
    %1 = stablehlo.remainder %arg0, %0 : tensor<4x5xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x5xf32>
    %3 = stablehlo.compare NE, %1, %2, FLOAT : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xi1>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4x5xf32>
    %5 = stablehlo.compare LT, %1, %4, FLOAT : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xi1>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %6 = stablehlo.compare LT, %arg1, %cst_1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %7 = stablehlo.broadcast_in_dim %6, dims = [] : (tensor<i1>) -> tensor<4x5xi1>
    %8 = stablehlo.compare NE, %5, %7, UNSIGNED : (tensor<4x5xi1>, tensor<4x5xi1>) -> tensor<4x5xi1>
    %9 = stablehlo.and %8, %3 : tensor<4x5xi1>
    %10 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<4x5xf32>
    %11 = stablehlo.add %1, %10 : tensor<4x5xf32>
    %12 = stablehlo.select %9, %11, %1 : tensor<4x5xi1>, tensor<4x5xf32>
    return %12 : tensor<4x5xf32>
  }
  func.func private @argmax(%arg0: tensor<3x6xi1>) -> tensor<3xi32> {
    %0 = stablehlo.iota dim = 1 : tensor<3x6xi32>
    %c = stablehlo.constant dense<false> : tensor<i1>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %1:2 = stablehlo.reduce(%arg0 init: %c), (%0 init: %c_0) across dimensions = [1] : (tensor<3x6xi1>, tensor<3x6xi32>, tensor<i1>, tensor<i32>) -> (tensor<3xi1>, tensor<3xi32>)
     reducer(%arg1: tensor<i1>, %arg3: tensor<i1>) (%arg2: tensor<i32>, %arg4: tensor<i32>)  {
      %2 = stablehlo.compare GT, %arg1, %arg3, UNSIGNED : (tensor<i1>, tensor<i1>) -> tensor<i1>
      %3 = stablehlo.compare NE, %arg1, %arg1, UNSIGNED : (tensor<i1>, tensor<i1>) -> tensor<i1>
      %4 = stablehlo.or %2, %3 : tensor<i1>
      %5 = stablehlo.compare EQ, %arg1, %arg3, UNSIGNED : (tensor<i1>, tensor<i1>) -> tensor<i1>
      %6 = stablehlo.compare LT, %arg2, %arg4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %7 = stablehlo.and %5, %6 : tensor<i1>
      %8 = stablehlo.or %4, %7 : tensor<i1>
      %9 = stablehlo.select %4, %arg1, %arg3 : tensor<i1>, tensor<i1>
      %10 = stablehlo.select %8, %arg2, %arg4 : tensor<i1>, tensor<i32>
      stablehlo.return %9, %10 : tensor<i1>, tensor<i32>
    }
    return %1#1 : tensor<3xi32>
  }
}
