module @jit_shapes attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x4xf32>, %arg1: tensor<i32>, %arg2: tensor<3xi32>) -> (tensor<3x4xf32> {jax.result_info = "result[0]"}, tensor<2x2xf32> {jax.result_info = "result[1]"}, tensor<4x6xf32> {jax.result_info = "result[2]"}, tensor<2x4xf32> {jax.result_info = "result[3]"}, tensor<4x3xf32> {jax.result_info = "result[4]"}, tensor<3x4xf32> {jax.result_info = "result[5]"}, tensor<3x4xf32> {jax.result_info = "result[6]"}, tensor<3x4xf32> {jax.result_info = "result[7]"}, tensor<2xf32> {jax.result_info = "result[8]"}, tensor<3x4xf32> {jax.result_info = "result[9]"}, tensor<2x2xf32> {jax.result_info = "result[10]"}) {
    %cst = stablehlo.constant dense<[[1.500000e+00, -2.000000e+00, 3.000000e+00, 2.500000e-01], [0.000000e+00, 9.99999993E-9, 7.000000e+00, -1.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00, 7.000000e+00]]> : tensor<3x4xf32>
    %0 = stablehlo.iota dim = 0 : tensor<12xf32>
    %1 = stablehlo.reshape %0 : (tensor<12xf32>) -> tensor<3x4xf32>
    %2 = stablehlo.multiply %cst, %arg0 : tensor<3x4xf32>
    %3 = stablehlo.add %1, %2 : tensor<3x4xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %4 = stablehlo.compare LT, %arg1, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_0 = stablehlo.constant dense<3> : tensor<i32>
    %5 = stablehlo.add %arg1, %c_0 : tensor<i32>
    %6 = stablehlo.select %4, %5, %arg1 : tensor<i1>, tensor<i32>
    %c_1 = stablehlo.constant dense<1> : tensor<i32>
    %7 = stablehlo.dynamic_slice %arg0, %6, %c_1, sizes = [2, 2] : (tensor<3x4xf32>, tensor<i32>, tensor<i32>) -> tensor<2x2xf32>
    %cst_2 = stablehlo.constant dense<-1.000000e+00> : tensor<f32>
    %8 = call @_pad(%arg0, %cst_2) : (tensor<3x4xf32>, tensor<f32>) -> tensor<4x6xf32>
    %9 = stablehlo.concatenate %arg0, %3, dim = 0 : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<6x4xf32>
    %10 = stablehlo.slice %9 [1:5:2, 0:4] : (tensor<6x4xf32>) -> tensor<2x4xf32>
    %11 = stablehlo.reverse %10, dims = [1] : tensor<2x4xf32>
    %12 = stablehlo.reshape %arg0 : (tensor<3x4xf32>) -> tensor<2x6xf32>
    %13 = stablehlo.transpose %12, dims = [1, 0] : (tensor<2x6xf32>) -> tensor<6x2xf32>
    %14 = stablehlo.reshape %13 : (tensor<6x2xf32>) -> tensor<4x3xf32>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %15 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %16 = stablehlo.compare LT, %arg2, %15, SIGNED : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %c_4 = stablehlo.constant dense<3> : tensor<i32>
    %17 = stablehlo.broadcast_in_dim %c_4, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %18 = stablehlo.add %arg2, %17 : tensor<3xi32>
    %19 = stablehlo.select %16, %18, %arg2 : tensor<3xi1>, tensor<3xi32>
    %20 = stablehlo.broadcast_in_dim %19, dims = [0] : (tensor<3xi32>) -> tensor<3x1xi32>
    %21 = "stablehlo.gather"(%arg0, %20) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 4>}> : (tensor<3x4xf32>, tensor<3x1xi32>) -> tensor<3x4xf32>
    %c_5 = stablehlo.constant dense<0> : tensor<i32>
    %22 = stablehlo.broadcast_in_dim %c_5, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %23 = stablehlo.compare LT, %arg2, %22, SIGNED : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %c_6 = stablehlo.constant dense<3> : tensor<i32>
    %24 = stablehlo.broadcast_in_dim %c_6, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %25 = stablehlo.add %arg2, %24 : tensor<3xi32>
    %26 = stablehlo.select %23, %25, %arg2 : tensor<3xi1>, tensor<3xi32>
    %27 = stablehlo.broadcast_in_dim %26, dims = [0] : (tensor<3xi32>) -> tensor<3x1xi32>
    %cst_7 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %28 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<3x4xf32>
    %29 = "stablehlo.scatter"(%arg0, %27, %28) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
      %51 = stablehlo.add %arg3, %arg4 : tensor<f32>
      stablehlo.return %51 : tensor<f32>
    }) : (tensor<3x4xf32>, tensor<3x1xi32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %30 = stablehlo.slice %arg0 [0:3, 0:1] : (tensor<3x4xf32>) -> tensor<3x1xf32>
    %31 = stablehlo.broadcast_in_dim %30, dims = [0, 1] : (tensor<3x1xf32>) -> tensor<3x4xf32>
    %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %32 = stablehlo.reduce(%arg0 init: %cst_8) applies stablehlo.add across dimensions = [0] : (tensor<3x4xf32>, tensor<f32>) -> tensor<4xf32>
    %33 = stablehlo.broadcast_in_dim %32, dims = [1] : (tensor<4xf32>) -> tensor<1x4xf32>
    %34 = stablehlo.broadcast_in_dim %33, dims = [0, 1] : (tensor<1x4xf32>) -> tensor<3x4xf32>
    %35 = stablehlo.add %31, %34 : tensor<3x4xf32>
    %cst_9 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %36 = stablehlo.reduce(%arg0 init: %cst_9) applies stablehlo.maximum across dimensions = [1] : (tensor<3x4xf32>, tensor<f32>) -> tensor<3xf32>
    %37 = stablehlo.broadcast_in_dim %36, dims = [0] : (tensor<3xf32>) -> tensor<3x1xf32>
    %38 = stablehlo.broadcast_in_dim %37, dims = [0, 1] : (tensor<3x1xf32>) -> tensor<3x4xf32>
    %39 = stablehlo.add %35, %38 : tensor<3x4xf32>
    %40 = stablehlo.slice %arg0 [0:2, 0:2] : (tensor<3x4xf32>) -> tensor<2x2xf32>
    %cst_10 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %41 = stablehlo.reduce(%40 init: %cst_10) applies stablehlo.multiply across dimensions = [1] : (tensor<2x2xf32>, tensor<f32>) -> tensor<2xf32>
    %cst_11 = stablehlo.constant dense<0x7F800000> : tensor<f32>
    %42 = stablehlo.reduce(%arg0 init: %cst_11) applies stablehlo.minimum across dimensions = [1] : (tensor<3x4xf32>, tensor<f32>) -> tensor<3xf32>
    %43 = stablehlo.slice %42 [0:2] : (tensor<3xf32>) -> tensor<2xf32>
    %44 = stablehlo.add %41, %43 : tensor<2xf32>
    %cst_12 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %45 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<1x2xf32>
    %c_13 = stablehlo.constant dense<0> : tensor<i32>
    %46 = stablehlo.compare LT, %arg1, %c_13, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_14 = stablehlo.constant dense<3> : tensor<i32>
    %47 = stablehlo.add %arg1, %c_14 : tensor<i32>
    %48 = stablehlo.select %46, %47, %arg1 : tensor<i1>, tensor<i32>
    %c_15 = stablehlo.constant dense<2> : tensor<i32>
    %49 = stablehlo.dynamic_update_slice %arg0, %45, %48, %c_15 : (tensor<3x4xf32>, tensor<1x2xf32>, tensor<i32>, tensor<i32>) -> tensor<3x4xf32>
    %cst_16 = stablehlo.constant dense<0x7F800000> : tensor<f32>
    %50 = stablehlo.broadcast_in_dim %cst_16, dims = [] : (tensor<f32>) -> tensor<2x2xf32>
    return %3, %7, %8, %11, %14, %21, %29, %39, %44, %49, %50 : tensor<3x4xf32>, tensor<2x2xf32>, tensor<4x6xf32>, tensor<2x4xf32>, tensor<4x3xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<2xf32>, tensor<3x4xf32>, tensor<2x2xf32>
  }
  func.func private @_pad(%arg0: tensor<3x4xf32>, %arg1: tensor<f32>) -> tensor<4x6xf32> {
    %0 = stablehlo.convert %arg1 : tensor<f32>
    %1 = stablehlo.pad %arg0, %0, low = [1, 0], high = [0, 2], interior = [0, 0] : (tensor<3x4xf32>, tensor<f32>) -> tensor<4x6xf32>
    return %1 : tensor<4x6xf32>
  }
}
